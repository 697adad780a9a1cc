import { useEffect, useState } from 'react';
import { api, errorText } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { useApi } from '../shell/useApi.ts';
import type { CronView } from '../../../../../query-side/task/cronView.ts';

/** A project's scheduler: GET /cron/status (refreshed every few seconds), POST /cron/manage START/STOP. */
export const CronPanel = ({ projectLaui }: { projectLaui: string }) => {
  const status = useApi((signal) => api<CronView>(`/api/v1/cron/status/${projectLaui}`, { signal }), [projectLaui]);
  const [message, setMessage] = useState<{ kind: 'error' | 'success'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const { reload } = status;

  useEffect(() => {
    const timer = setInterval(reload, 3000);
    return () => clearInterval(timer);
  }, [reload]);

  const manage = async (action: 'START' | 'STOP'): Promise<void> => {
    setBusy(true);
    setMessage(null);
    try {
      const reply = await api<{ message: string }>('/api/v1/cron/manage', { body: { project_laui: projectLaui, action } });
      setMessage({ kind: 'success', text: reply.message });
      reload();
    } catch (error) {
      setMessage({ kind: 'error', text: errorText(error) });
    } finally {
      setBusy(false);
    }
  };

  const view = status.data;
  const running = view !== null && (view.cron_status === 'STARTED' || view.cron_status === 'RUNNING');
  return (
    <section className="panel" aria-labelledby="cron-heading">
      <h3 id="cron-heading">Scheduler (cron)</h3>
      {status.error ? <Notice kind="error">{status.error}</Notice> : null}
      {view ? (
        <dl className="facts">
          <dt>Status</dt>
          <dd>
            <span className={`badge cron-${view.cron_status ?? 'none'}`} data-testid="cron-status">
              {view.cron_status ?? 'never started'}
            </span>{' '}
            {view.alive ? 'alive' : running ? 'no recent heartbeat' : ''}
          </dd>
          <dt>Interval</dt>
          <dd>{view.interval_seconds} s</dd>
          <dt>Latest heartbeat</dt>
          <dd>{view.latest_heartbeat ?? '—'}</dd>
          <dt>Started / stopped</dt>
          <dd>
            {view.start_date ?? '—'} / {view.stop_date ?? '—'}
          </dd>
          {view.error ? (
            <>
              <dt>Error</dt>
              <dd className="field-error">{view.error}</dd>
            </>
          ) : null}
        </dl>
      ) : null}
      <div className="actions">
        <button type="button" className="primary" disabled={busy || running} onClick={() => void manage('START')}>
          Start cron
        </button>
        <button type="button" disabled={busy || !running} onClick={() => void manage('STOP')}>
          Stop cron
        </button>
      </div>
      {message ? <Notice kind={message.kind}>{message.text}</Notice> : null}
    </section>
  );
};
