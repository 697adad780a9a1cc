import { useId, useState, type FormEvent } from 'react';
import { api, errorText } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { ResultTable } from '../shell/ResultTable.tsx';

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
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const id = useId();

  const run = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setRunning(true);
    setFailure(null);
    try {
      const result = await api<Answer>('/api/v1/logs/query', { body: { sql, category, ...(date ? { date } : {}) } });
      if (result.error) {
        setAnswer(null);
        setFailure(result.error);
      } else setAnswer(result);
    } catch (error) {
      setFailure(errorText(error));
    } finally {
      setRunning(false);
    }
  };

  return (
    <section aria-labelledby={`${id}-heading`} className="page">
      <h2 id={`${id}-heading`}>Log query</h2>
      <p className="hint">
        One SQL <code>SELECT</code> over a category's log lines, the view <code>logs</code>; a day limits the scan to that day's file. Try{' '}
        <code>DESCRIBE logs</code> for its columns.
      </p>
      <form onSubmit={(event) => void run(event)} className="query-form">
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
        <button type="submit" className="primary" disabled={running}>
          {running ? 'Running…' : 'Run query'}
        </button>
      </form>
      {failure ? <Notice kind="error">{failure}</Notice> : null}
      {answer?.columns && answer.rows ? (
        <>
          <Notice kind="info">
            {answer.row_count ?? answer.rows.length} rows{answer.truncated ? ' (truncated)' : ''}
          </Notice>
          <ResultTable caption="Log query result" columns={answer.columns} rows={answer.rows} />
        </>
      ) : null}
    </section>
  );
};
