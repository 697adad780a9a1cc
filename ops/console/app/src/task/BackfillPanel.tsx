import { useEffect, useId, useState } from 'react';
import { api, errorText, query } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';

const POLL_MS = 1000;

interface BackfillRun {
  logical_date: string;
  data_interval_end: string;
  state: string;
  detail: string | null;
}

interface Backfill {
  backfill_id: string;
  status: 'running' | 'cancelled' | 'completed';
  start_date: string;
  end_date: string;
  total: number;
  done: number;
  failed: number;
  running: number;
  pending: number;
  runs: BackfillRun[];
}

/**
 * A scheduled task's backfills (POST /task/backfill, GET /task/backfill?task_laui=): a form for a
 * range, and the newest backfill's progress with its runs, polled until it completes, cancellable.
 */
export const BackfillPanel = ({ taskLaui }: { taskLaui: string }) => {
  const id = useId();
  const [start, setStart] = useState('');
  const [end, setEnd] = useState('');
  const [backfills, setBackfills] = useState<Backfill[] | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const latest = backfills?.[0] ?? null;
  const live = latest !== null && latest.status !== 'completed';

  const load = async (signal?: AbortSignal): Promise<void> => {
    const answer = await api<{ backfills: Backfill[] }>(`/api/v1/task/backfill?${query({ task_laui: taskLaui })}`, signal ? { signal } : {});
    setBackfills(answer.backfills);
  };

  useEffect(() => {
    const controller = new AbortController();
    load(controller.signal).catch(() => undefined);
    return () => controller.abort();
  }, [taskLaui]);

  useEffect(() => {
    if (!live) return;
    const controller = new AbortController();
    const timer = setInterval(() => void load(controller.signal).catch(() => undefined), POLL_MS);
    return () => {
      clearInterval(timer);
      controller.abort();
    };
  }, [live, taskLaui]);

  const act = async (request: () => Promise<unknown>): Promise<void> => {
    setBusy(true);
    setMessage(null);
    try {
      await request();
      await load();
    } catch (error) {
      setMessage(errorText(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="backfill" aria-labelledby={`${id}-heading`}>
      <h4 id={`${id}-heading`}>Backfill</h4>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void act(() => api('/api/v1/task/backfill', { body: { item_laui: taskLaui, start_date: start, end_date: end } }));
        }}
      >
        <div className="row">
          <div className="field">
            <label htmlFor={`${id}-start`}>From (UTC)</label>
            <input id={`${id}-start`} type="date" required value={start} onChange={(event) => setStart(event.target.value)} />
          </div>
          <div className="field">
            <label htmlFor={`${id}-end`}>To (UTC, included)</label>
            <input id={`${id}-end`} type="date" required value={end} onChange={(event) => setEnd(event.target.value)} />
          </div>
        </div>
        <button type="submit" disabled={busy || live}>
          Backfill
        </button>
      </form>
      {message ? <Notice kind="error">{message}</Notice> : null}
      {latest ? (
        <div data-testid="backfill-progress" data-status={latest.status}>
          <p>
            <span className={`badge state-${latest.status === 'completed' ? (latest.failed > 0 ? 'error' : 'success') : 'running'}`}>{latest.status}</span>{' '}
            {latest.done} of {latest.total} done · {latest.failed} failed · {latest.running} running · {latest.pending} not started
            <span className="hint"> ({latest.start_date.slice(0, 10)} to {latest.end_date.slice(0, 10)})</span>
          </p>
          <progress max={latest.total} value={latest.done + latest.failed} aria-label="Backfill progress" />
          {latest.status === 'running' ? (
            <button type="button" onClick={() => void act(() => api(`/api/v1/task/backfill/${latest.backfill_id}/cancel`, { method: 'POST' }))} disabled={busy}>
              Cancel backfill
            </button>
          ) : null}
          <details>
            <summary>Runs</summary>
            <ol className="backfill-runs">
              {latest.runs.map((run) => (
                <li key={run.logical_date}>
                  {run.logical_date} <span className={`badge state-${run.state}`}>{run.state}</span>
                  {run.detail ? <span className="hint"> — {run.detail}</span> : null}
                </li>
              ))}
            </ol>
          </details>
        </div>
      ) : null}
    </section>
  );
};
