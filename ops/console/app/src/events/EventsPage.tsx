import { useEffect, useId, useRef, useState } from 'react';
import { api, ApiError, errorText, query } from '../api.ts';
import { readSse } from '../sse.ts';
import { Notice } from '../shell/Notice.tsx';
import type { EventEnvelope as Envelope } from '../../../../../query-side/events/eventEnvelope.ts';

const KEEP = 500;
/** Without a `from`, the view starts this many events before the head of the log, then follows. */
const BACKLOG = 100;

/** Whether the log holds an event after `position`; a `from` past its end is a 400 (nothing after it either). */
const hasEventsAfter = async (position: number, signal: AbortSignal): Promise<boolean> => {
  try {
    return (await api<{ events: unknown[] }>(`/api/v1/events?${query({ from: position, limit: 1 })}`, { signal })).events.length > 0;
  } catch (error) {
    if (error instanceof ApiError && error.status === 400) return false;
    throw error;
  }
};

/**
 * The position of the log's last event, found with GET /events pages of one event (doubling, then
 * halving: some 2·log2(head) small reads), so that opening the view does not replay the whole log.
 */
const headPosition = async (signal: AbortSignal): Promise<number> => {
  if (!(await hasEventsAfter(0, signal))) return 0;
  let low = 0;
  let high = 1;
  while (await hasEventsAfter(high, signal)) {
    low = high;
    high *= 2;
  }
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (await hasEventsAfter(middle, signal)) low = middle;
    else high = middle;
  }
  return high;
};

/**
 * The event log as it is written (GET /api/v1/events/stream, administrators and auditors): the
 * latest events first, optionally from a position and filtered by type prefix or stream.
 * Reconnects after a dropped connection from the last position seen (Last-Event-ID).
 */
export const EventsPage = () => {
  const [filter, setFilter] = useState({ type: '', stream: '', from: '' });
  const [applied, setApplied] = useState(filter);
  const [following, setFollowing] = useState(true);
  const [events, setEvents] = useState<Envelope[]>([]);
  const [status, setStatus] = useState<string>('connecting');
  const [failure, setFailure] = useState<string | null>(null);
  const last = useRef<string | null>(null);
  const id = useId();

  useEffect(() => {
    if (!following) {
      setStatus('paused');
      return;
    }
    const controller = new AbortController();
    // Events arrive by the thousand when a backlog replays: the list is redrawn at most every 100 ms.
    let buffered: Envelope[] = [];
    let flush: ReturnType<typeof setTimeout> | null = null;
    const push = (envelope: Envelope): void => {
      buffered.push(envelope);
      flush ??= setTimeout(() => {
        const batch = buffered.reverse();
        buffered = [];
        flush = null;
        setEvents((previous) => [...batch, ...previous].slice(0, KEEP));
      }, 100);
    };
    const follow = async (): Promise<void> => {
      let from = applied.from;
      if (from === '') {
        try {
          from = String(Math.max(0, (await headPosition(controller.signal)) - BACKLOG));
        } catch (error) {
          if (controller.signal.aborted) return;
          setFailure(errorText(error));
          setStatus('error');
          return;
        }
      }
      for (let attempt = 0; !controller.signal.aborted; attempt += 1) {
        setStatus(`live from position ${from}`);
        try {
          const params = query({ type: applied.type || undefined, stream: applied.stream || undefined, from });
          await readSse(
            `/api/v1/events/stream?${params}`,
            (message) => {
              if (message.id) last.current = message.id;
              if (message.event === 'dropped') return;
              push(JSON.parse(message.data) as Envelope);
            },
            { signal: controller.signal, lastEventId: last.current },
          );
        } catch (error) {
          if (controller.signal.aborted) return;
          setFailure(errorText(error));
          setStatus('error');
          if (/403|Access denied|administrators/i.test(errorText(error))) return;
        }
        setStatus('reconnecting');
        await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 1000 * (attempt + 1))));
      }
    };
    void follow();
    return () => {
      controller.abort();
      if (flush !== null) clearTimeout(flush);
    };
  }, [following, applied]);

  return (
    <section aria-labelledby={`${id}-heading`} className="page">
      <h2 id={`${id}-heading`}>Event stream</h2>
      <p className="hint">
        Every event of the log, redacted, as it is written (administrators and auditors). Without a position the view starts with the latest {BACKLOG}.
      </p>
      <form
        className="row"
        onSubmit={(event) => {
          event.preventDefault();
          last.current = null;
          setEvents([]);
          setFailure(null);
          setApplied(filter);
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-type`}>Type prefix</label>
          <input id={`${id}-type`} value={filter.type} placeholder="Task" onChange={(event) => setFilter({ ...filter, type: event.target.value })} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-stream`}>Stream</label>
          <input id={`${id}-stream`} value={filter.stream} placeholder="item-<laui>" onChange={(event) => setFilter({ ...filter, stream: event.target.value })} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-from`}>From position</label>
          <input id={`${id}-from`} inputMode="numeric" value={filter.from} placeholder={`latest ${BACKLOG}`} onChange={(event) => setFilter({ ...filter, from: event.target.value })} />
        </div>
        <div className="actions">
          <button type="submit" className="primary">
            Apply
          </button>
          <button type="button" aria-pressed={!following} onClick={() => setFollowing(!following)}>
            {following ? 'Pause' : 'Resume'}
          </button>
        </div>
      </form>
      <p role="status" className="hint">
        {status} · {events.length} events shown (latest {KEEP} kept)
      </p>
      {failure ? <Notice kind="error">{failure}</Notice> : null}
      <ol className="events" aria-label="Events, newest first">
        {events.map((event) => (
          <li key={event.position}>
            <details>
              <summary>
                <span className="mono">#{event.position}</span> <strong>{event.type}</strong> <span className="mono">{event.stream}</span>{' '}
                <span className="hint">{event.metadata.at ?? ''}</span>
              </summary>
              <pre className="json">{JSON.stringify({ data: event.data, metadata: event.metadata }, null, 2)}</pre>
            </details>
          </li>
        ))}
      </ol>
    </section>
  );
};
