import { useState } from 'react';
import { api, errorText } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';

interface Check {
  triggered: boolean;
  severity: 'info' | 'warning' | 'blocking';
  title: string;
  details: string;
}

/** GET /task/diagnose/{laui}: why a task does not run; what was found first, then what was checked. */
export const DiagnosePanel = ({ taskLaui }: { taskLaui: string }) => {
  const [checks, setChecks] = useState<Array<[string, Check]> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const diagnose = async (): Promise<void> => {
    setLoading(true);
    setError(null);
    try {
      const result = await api<Record<string, Check>>(`/api/v1/task/diagnose/${taskLaui}`);
      setChecks(Object.entries(result).sort(([, left], [, right]) => Number(right.triggered) - Number(left.triggered)));
    } catch (caught) {
      setError(errorText(caught));
    } finally {
      setLoading(false);
    }
  };
  const found = checks?.filter(([, check]) => check.triggered) ?? [];
  return (
    <section className="diagnose" aria-labelledby="diagnose-heading">
      <h4 id="diagnose-heading">Diagnose</h4>
      <button type="button" onClick={() => void diagnose()} disabled={loading}>
        {loading ? 'Checking…' : checks ? 'Check again' : 'Why does it not run?'}
      </button>
      {error ? <Notice kind="error">{error}</Notice> : null}
      {checks ? (
        <>
          <Notice kind="info">{found.length === 0 ? 'Nothing prevents this task from running.' : `${found.length} finding${found.length === 1 ? '' : 's'}.`}</Notice>
          <ul className="checks">
            {checks.map(([key, check]) => (
              <li key={key} className={check.triggered ? `triggered severity-${check.severity}` : 'passed'}>
                <span className={`badge severity-${check.triggered ? check.severity : 'ok'}`}>{check.triggered ? check.severity : 'ok'}</span> <strong>{check.title}</strong>
                <span className="hint"> — {check.details}</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
};
