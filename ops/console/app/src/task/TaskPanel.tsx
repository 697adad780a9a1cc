import { useEffect, useState } from 'react';
import { api, errorText, query } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import type { Item } from '../catalog/types.ts';
import { RunOutput } from './RunOutput.tsx';
import { DiagnosePanel } from './DiagnosePanel.tsx';

const ACTIVE = new Set(['queued_for_connection', 'queued_in_redis', 'running']);
const POLL_MS = 1000;

/**
 * A task: its state (polled while a run is under way), Run, Cancel, Diagnose, and the live
 * output of the current or last run.
 */
export const TaskPanel = ({ task: initial, onChanged, onPolled }: { task: Item; onChanged(): void; onPolled(task: Item): void }) => {
  const [task, setTask] = useState<Item>(initial);
  const [busy, setBusy] = useState<'run' | 'cancel' | 'reset' | null>(null);
  const [message, setMessage] = useState<{ kind: 'error' | 'success'; text: string } | null>(null);
  const [watching, setWatching] = useState(false);
  const state = String(task.state ?? 'scheduled');
  const active = ACTIVE.has(state);

  useEffect(() => setTask(initial), [initial]);

  useEffect(() => {
    if (!active && !watching) return;
    const controller = new AbortController();
    const timer = setInterval(() => {
      api<Item>(`/api/v1/catalog/get?${query({ item_laui: task.laui })}`, { signal: controller.signal }).then(
        (fresh) => {
          setTask(fresh);
          onPolled(fresh);
          if (!ACTIVE.has(String(fresh.state)) && fresh.session_id !== undefined) {
            setWatching(false);
            onChanged();
          }
        },
        () => undefined,
      );
    }, POLL_MS);
    return () => {
      clearInterval(timer);
      controller.abort();
    };
  }, [active, watching, task.laui]);

  const act = async (kind: 'run' | 'cancel' | 'reset'): Promise<void> => {
    setBusy(kind);
    setMessage(null);
    try {
      if (kind === 'run') {
        await api('/api/v1/task/run', { body: { item_laui: task.laui } });
        setMessage({ kind: 'success', text: 'Run requested' });
      } else if (kind === 'cancel') {
        await api(`/api/v1/task/update/${task.laui}`, { body: { user_set_state: 'cancel' } });
        setMessage({ kind: 'success', text: 'Cancellation requested: the worker stops the run at its next check' });
      } else {
        await api(`/api/v1/task/dangerously_reset/${task.laui}`, { method: 'POST' });
        setMessage({ kind: 'success', text: 'Task reset to scheduled' });
      }
      setTask(await api<Item>(`/api/v1/catalog/get?${query({ item_laui: task.laui })}`));
      setWatching(true);
    } catch (error) {
      setMessage({ kind: 'error', text: errorText(error) });
    } finally {
      setBusy(null);
    }
  };

  const sessionId = typeof task.session_id === 'string' ? task.session_id : typeof task.last_run_session_id === 'string' ? task.last_run_session_id : null;

  return (
    <section className="panel task-panel" aria-labelledby="task-run-heading">
      <h3 id="task-run-heading">Run</h3>
      <p>
        State:{' '}
        <span className={`badge state-${state}`} data-testid="task-state" aria-live="polite">
          {state}
        </span>
        {task.user_set_state === 'cancel' ? <span className="badge state-cancelled">cancel requested</span> : null}
        {typeof task.iteration === 'number' ? <span className="hint"> · {task.iteration === 1 ? '1 run' : `${task.iteration} runs`}</span> : null}
        {typeof task.duration === 'number' ? <span className="hint"> · last took {task.duration} s</span> : null}
      </p>
      <div className="actions">
        <button type="button" className="primary" onClick={() => void act('run')} disabled={busy !== null || active}>
          {busy === 'run' ? 'Starting…' : 'Run now'}
        </button>
        <button type="button" onClick={() => void act('cancel')} disabled={busy !== null || !active || task.user_set_state === 'cancel'}>
          Cancel run
        </button>
        <button type="button" onClick={() => void act('reset')} disabled={busy !== null}>
          Reset
        </button>
      </div>
      {message ? <Notice kind={message.kind}>{message.text}</Notice> : null}
      {task.last_run_output && Object.keys(task.last_run_output as object).length > 0 && !active ? (
        <details>
          <summary>Last run output (last_run_output)</summary>
          <pre className="json">{JSON.stringify(task.last_run_output, null, 2)}</pre>
        </details>
      ) : null}
      {sessionId ? <RunOutput key={sessionId} sessionId={sessionId} live={active} /> : <p className="hint">No run yet.</p>}
      <DiagnosePanel taskLaui={task.laui} />
    </section>
  );
};
