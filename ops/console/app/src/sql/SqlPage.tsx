import { useId, useState } from 'react';
import { api } from '../api.ts';
import { useAction } from '../shell/useAction.ts';
import { Notice } from '../shell/Notice.tsx';
import { QueryResult } from '../shell/ResultTable.tsx';
import { SqlField } from '../shell/SqlField.tsx';
import { ReferenceSelect } from '../catalog/ReferenceSelect.tsx';
import type { ItemTypeInfo } from '../catalog/types.ts';

interface Answer {
  columns: string[];
  rows: unknown[][];
  row_count: number;
  truncated: boolean;
}

/** POST /query/execute: one read-only statement against the system a connection item points at. */
export const SqlPage = ({ types, initialConnection }: { types: Map<string, ItemTypeInfo>; initialConnection: string }) => {
  const [connection, setConnection] = useState(initialConnection);
  const [sql, setSql] = useState('SELECT 1 AS ok');
  const statement = useAction(() => api<Answer>('/api/v1/query/execute', { body: { connection_laui: connection, sql } }));
  const id = useId();

  return (
    <section aria-labelledby={`${id}-heading`} className="page">
      <h2 id={`${id}-heading`}>SQL inspection</h2>
      <p className="hint">
        Read-only: <code>SELECT</code>, <code>WITH</code> or <code>EXPLAIN</code>, at most 10,000 rows, 2 minutes.
      </p>
      <form
        className="query-form"
        onSubmit={(event) => {
          event.preventDefault();
          statement.run();
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-connection`}>Connection</label>
          <ReferenceSelect id={`${id}-connection`} family="connection" types={types} value={connection} required onChange={setConnection} />
        </div>
        <SqlField id={`${id}-sql`} value={sql} onChange={setSql} onRun={statement.run} />
        <button type="submit" className="primary" disabled={statement.running || connection === ''}>
          {statement.running ? 'Running…' : 'Run statement'}
        </button>
      </form>
      {statement.failure ? <Notice kind="error">{statement.failure}</Notice> : null}
      {statement.result && !statement.running ? <QueryResult caption="Statement result" answer={statement.result} /> : null}
    </section>
  );
};
