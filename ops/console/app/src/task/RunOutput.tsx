import { useEffect, useRef, useState } from 'react';
import { errorText } from '../api.ts';
import { readSse } from '../sse.ts';

interface LogLine {
  timestamp?: string;
  level?: string;
  step?: string;
  message?: unknown;
}

const MAX_LINES = 5000;

/**
 * A run's output, live: GET /api/v1/logs/session/{id} (Server-Sent Events) from its first line
 * until the run's last (`done`). The session file appears with the run's first line, so while the
 * run is still `live` a `Session not found` is tried again shortly.
 */
export const RunOutput = ({ sessionId, live }: { sessionId: string; live: boolean }) => {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [status, setStatus] = useState<'connecting' | 'following' | 'done' | 'error'>('connecting');
  const [problem, setProblem] = useState<string | null>(null);
  const liveRef = useRef(live);
  liveRef.current = live;
  const box = useRef<HTMLPreElement>(null);

  useEffect(() => {
    const controller = new AbortController();
    setLines([]);
    setStatus('connecting');
    const follow = async (): Promise<void> => {
      for (let attempt = 0; !controller.signal.aborted; attempt += 1) {
        let missing = false;
        let received: LogLine[] = [];
        try {
          await readSse(
            `/api/v1/logs/session/${encodeURIComponent(sessionId)}`,
            (message) => {
              if (message.event === 'log') {
                setStatus('following');
                const line = JSON.parse(message.data) as LogLine;
                received = [...received, line];
                setLines((previous) => [...previous, line].slice(-MAX_LINES));
              } else if (message.event === 'done') {
                setStatus('done');
              } else if (message.event === 'error') {
                const text = (JSON.parse(message.data) as { message?: string }).message ?? 'error';
                if (text === 'Session not found') missing = true;
                else {
                  setProblem(text);
                  setStatus('error');
                }
              }
            },
            { signal: controller.signal },
          );
        } catch (error) {
          if (controller.signal.aborted) return;
          setProblem(errorText(error));
          setStatus('error');
          return;
        }
        // A stream that ended idle (no session_end) is read again from the start: only then retry.
        if (!missing || !liveRef.current) {
          if (missing) setStatus('done');
          return;
        }
        setLines([]);
        await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 250 * (attempt + 1))));
      }
    };
    void follow();
    return () => controller.abort();
  }, [sessionId]);

  useEffect(() => {
    const element = box.current;
    if (element) element.scrollTop = element.scrollHeight;
  }, [lines]);

  return (
    <section className="run-output" aria-labelledby={`output-${sessionId}`}>
      <h4 id={`output-${sessionId}`}>
        Output <span className="hint">session {sessionId}</span>{' '}
        <span className={`badge stream-${status}`} role="status">
          {status === 'connecting' ? 'waiting for output' : status === 'following' ? 'live' : status === 'done' ? 'complete' : 'error'}
        </span>
      </h4>
      {problem ? <p className="field-error">{problem}</p> : null}
      <pre ref={box} className="log" role="log" aria-live="polite" aria-label="Run output" tabIndex={0} data-lines={lines.length}>
        {lines.map((line, index) => (
          <span key={index} className={`log-line level-${line.level ?? 'info'}`}>
            <span className="log-time">{line.timestamp?.slice(11, 23) ?? ''}</span> <span className="log-step">{line.step ?? ''}</span>{' '}
            {typeof line.message === 'string' ? line.message : JSON.stringify(line.message)}
            {'\n'}
          </span>
        ))}
      </pre>
    </section>
  );
};
