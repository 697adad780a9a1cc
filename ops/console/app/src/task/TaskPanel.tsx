import { useEffect, useRef, useState } from 'react';
import { api, errorText, query } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import type { Item } from '../catalog/types.ts';
import { RunOutput } from './RunOutput.tsx';
import { DiagnosePanel } from './DiagnosePanel.tsx';
import { BackfillPanel } from './BackfillPanel.tsx';
import { ACTIVE_STATES, marksOf, requestEnded, runBanner, type RunRequest } from './runBanner.ts';

const POLL_MS = 1000;

/**
 * A task: its state (polled while a run is under way or a requested one has not ended), Run,
 * Cancel, Diagnose, and the live output of the current or last run. The banner of a requested
 * run follows the polled state to the run's end (runBanner.ts).
 */
export const TaskPanel = ({ task: initial, onChanged, onPolled }: { task: Item; onChanged(): void; onPolled(task: Item): void }) => {
  const [task, setTask] = useState<Item>(initial);
  const [busy, setBusy] = useState<'run' | 'cancel' | 'reset' | null>(null);
  const [message, setMessage] = useState<{ kind: 'error' | 'success'; text: string } | null>(null);
  const [request, setRequest] = useState<RunRequest | null>(null);
  const state = String(task.state ?? 'scheduled');
  const active = ACTIVE_STATES.has(state);
  const following = request !== null && !requestEnded(request, task);
  const polling = active || following;

  useEffect(() => setTask(initial), [initial]);

  useEffect(() => {
    if (active) setRequest((current) => (current && !current.seenActive ? { ...current, seenActive: true } : current));
  }, [active]);

  // A run that ends reloads the item (its run output, duration and dates).
  const wasPolling = useRef(polling);
  useEffect(() => {
    if (wasPolling.current && !polling) onChanged();
    wasPolling.current = polling;
  }, [polling]);

  useEffect(() => {
    if (!polling) return;
    const controller = new AbortController();
    const timer = setInterval(() => {
      api<Item>(`/api/v1/catalog/get?${query({ item_laui: task.laui })}`, { signal: controller.signal }).then(
        (fresh) => {
          setTask(fresh);
          onPolled(fresh);
        },
        () => undefined,
      );
    }, POLL_MS);
    return () => {
      clearInterval(timer);
      controller.abort();
    };
  }, [polling, task.laui]);

  const act = async (kind: 'run' | 'cancel' | 'reset'): Promise<void> => {
    setBusy(kind);
    setMessage(null);
    setRequest(null);
    const before = marksOf(task);
    try {
      if (kind === 'run') {
        await api('/api/v1/task/run', { body: { item_laui: task.laui } });
        setRequest({ kind, before, seenActive: false });
      } else if (kind === 'cancel') {
        await api(`/api/v1/task/update/${task.laui}`, { body: { user_set_state: 'cancel' } });
        setRequest({ kind, before, seenActive: true });
      } else {
        await api(`/api/v1/task/dangerously_reset/${task.laui}`, { method: 'POST' });
        setMessage({ kind: 'success', text: 'Task reset to scheduled' });
      }
      setTask(await api<Item>(`/api/v1/catalog/get?${query({ item_laui: task.laui })}`));
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
      {request && !message ? <RunBanner request={request} task={task} /> : null}
      {task.last_run_output && Object.keys(task.last_run_output as object).length > 0 && !active ? (
        <details>
          <summary>Last run output (last_run_output)</summary>
          <pre className="json">{JSON.stringify(task.last_run_output, null, 2)}</pre>
        </details>
      ) : null}
      {sessionId ? <RunOutput key={sessionId} sessionId={sessionId} live={active} /> : <p className="hint">No run yet.</p>}
      {task.frequency && task.frequency !== 'ADHOC' ? <BackfillPanel taskLaui={task.laui} /> : null}
      <DiagnosePanel taskLaui={task.laui} />
    </section>
  );
};

const RunBanner = ({ request, task }: { request: RunRequest; task: Item }) => {
  const banner = runBanner(request, task);
  return (
    <div data-testid="run-banner" data-state={String(task.state ?? '')}>
      <Notice kind={banner.kind}>{banner.text}</Notice>
    </div>
  );
};
