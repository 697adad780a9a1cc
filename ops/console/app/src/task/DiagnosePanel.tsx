import { api } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { useAction } from '../shell/useAction.ts';

interface Check {
  triggered: boolean;
  severity: 'info' | 'warning' | 'blocking';
  title: string;
  details: string;
}

/** GET /task/diagnose/{laui}: why a task does not run; what was found first, then what was checked. */
export const DiagnosePanel = ({ taskLaui }: { taskLaui: string }) => {
  const diagnosis = useAction(async () => {
    const result = await api<Record<string, Check>>(`/api/v1/task/diagnose/${taskLaui}`);
    // What was found first, then what was checked and passed.
    return Object.entries(result).sort(([, left], [, right]) => Number(right.triggered) - Number(left.triggered));
  });
  const checks = diagnosis.result;
  const found = checks?.filter(([, check]) => check.triggered) ?? [];
  return (
    <section className="diagnose" aria-labelledby="diagnose-heading">
      <h4 id="diagnose-heading">Diagnose</h4>
      <button type="button" onClick={diagnosis.run} disabled={diagnosis.running}>
        {diagnosis.running ? 'Checking…' : checks ? 'Check again' : 'Why does it not run?'}
      </button>
      {diagnosis.failure ? <Notice kind="error">{diagnosis.failure}</Notice> : null}
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
