import { useId, useState } from 'react';
import { api } from '../api.ts';
import { useAction } from '../shell/useAction.ts';
import { Notice } from '../shell/Notice.tsx';
import { QueryResult } from '../shell/ResultTable.tsx';
import { SqlField } from '../shell/SqlField.tsx';

const CATEGORIES = ['TASK', 'TASK_HISTORY', 'API', 'PERFORMANCE', 'CRON', 'CELERY'];
const today = (): string => new Date().toISOString().slice(0, 10);

interface Answer {
  columns?: string[];
  rows?: unknown[][];
  row_count?: number;
  truncated?: boolean;
  error?: string;
}

/** POST /logs/query: SQL over one category's log lines, seen as the view `logs` (failures are 200 {error}). */
export const LogQueryPage = () => {
  const [category, setCategory] = useState('TASK_HISTORY');
  const [date, setDate] = useState(today());
  const [sql, setSql] = useState('SELECT timestamp, level, step, task_name, message FROM logs ORDER BY timestamp DESC LIMIT 100');
  const query = useAction(async () => {
    const answer = await api<Answer>('/api/v1/logs/query', { body: { sql, category, ...(date ? { date } : {}) } });
    // The route's failures are HTTP 200 {error} (spec 4.9).
    if (answer.error !== undefined || !answer.columns || !answer.rows) throw new Error(answer.error ?? 'The answer has no rows');
    return { ...answer, columns: answer.columns, rows: answer.rows };
  });
  const id = useId();

  return (
    <section aria-labelledby={`${id}-heading`} className="page">
      <h2 id={`${id}-heading`}>Log query</h2>
      <p className="hint">
        One SQL <code>SELECT</code> over a category's log lines, the view <code>logs</code>; a day limits the scan to that day's file. Try{' '}
        <code>DESCRIBE logs</code> for its columns.
      </p>
      <form
        className="query-form"
        onSubmit={(event) => {
          event.preventDefault();
          query.run();
        }}
      >
        <div className="row">
          <div className="field">
            <label htmlFor={`${id}-category`}>Category</label>
            <select id={`${id}-category`} value={category} onChange={(event) => setCategory(event.target.value)}>
              {CATEGORIES.map((name) => (
                <option key={name}>{name}</option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-date`}>Day (UTC, empty: every day)</label>
            <input id={`${id}-date`} type="date" value={date} onChange={(event) => setDate(event.target.value)} />
          </div>
        </div>
        <SqlField id={`${id}-sql`} value={sql} onChange={setSql} onRun={query.run} />
        <button type="submit" className="primary" disabled={query.running}>
          {query.running ? 'Running…' : 'Run query'}
        </button>
      </form>
      {query.failure ? <Notice kind="error">{query.failure}</Notice> : null}
      {query.result ? <QueryResult caption="Log query result" answer={query.result} /> : null}
    </section>
  );
};
