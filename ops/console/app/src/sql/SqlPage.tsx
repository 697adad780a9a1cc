import { useId, useState, type FormEvent } from 'react';
import { api, errorText } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { ResultTable } from '../shell/ResultTable.tsx';
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
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const id = useId();

  const run = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setRunning(true);
    setFailure(null);
    setAnswer(null);
    try {
      setAnswer(await api<Answer>('/api/v1/query/execute', { body: { connection_laui: connection, sql } }));
    } catch (error) {
      setFailure(errorText(error));
    } finally {
      setRunning(false);
    }
  };

  return (
    <section aria-labelledby={`${id}-heading`} className="page">
      <h2 id={`${id}-heading`}>SQL inspection</h2>
      <p className="hint">
        Read-only: <code>SELECT</code>, <code>WITH</code> or <code>EXPLAIN</code>, at most 10,000 rows, 2 minutes.
      </p>
      <form onSubmit={(event) => void run(event)} className="query-form">
        <div className="field">
          <label htmlFor={`${id}-connection`}>Connection</label>
          <ReferenceSelect id={`${id}-connection`} family="connection" types={types} value={connection} required onChange={setConnection} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-sql`}>SQL</label>
          <textarea
            id={`${id}-sql`}
            className="sql"
            rows={5}
            spellCheck={false}
            value={sql}
            onChange={(event) => setSql(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) void run(event);
            }}
          />
          <span className="hint">Ctrl+Enter runs it.</span>
        </div>
        <button type="submit" className="primary" disabled={running || connection === ''}>
          {running ? 'Running…' : 'Run statement'}
        </button>
      </form>
      {failure ? <Notice kind="error">{failure}</Notice> : null}
      {answer ? (
        <>
          <Notice kind="info">
            {answer.row_count} rows{answer.truncated ? ' (truncated at the limit)' : ''}
          </Notice>
          <ResultTable caption="Statement result" columns={answer.columns} rows={answer.rows} />
        </>
      ) : null}
    </section>
  );
};
