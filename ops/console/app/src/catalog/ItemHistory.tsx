import { useEffect, useState } from 'react';
import { api, query } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { UserRef } from '../shell/UserRef.tsx';
import { useApi } from '../shell/useApi.ts';
import { fieldDiff, type FieldChange } from './fieldDiff.ts';
import { ValueView } from './ValueView.tsx';

interface HistoryEntry {
  revision: number;
  event: string;
  at: string;
  user_laui: string | null;
  version: number | null;
  changed_fields: string[];
  changes?: Record<string, unknown>;
}

/**
 * GET /catalog/get/item_history: every event of the item, oldest first as the service lists them,
 * numbered from 1 in the text (not by list markers: a `reversed` list re-rendered by React counted
 * from the wrong number in Chromium), who and when, and the values it set.
 */
export const ItemHistory = ({ laui }: { laui: string }) => {
  const { data, error } = useApi((signal) => api<HistoryEntry[]>(`/api/v1/catalog/get/item_history?${query({ item_laui: laui })}`, { signal }), [laui]);
  if (error) return <Notice kind="error">{error}</Notice>;
  if (!data) return <p className="hint">Loading history…</p>;
  return (
    <ol className="history" aria-label="History, oldest first">
      {data.map((entry, index) => (
        <li key={entry.revision} data-testid="history-entry">
          <span className="history-number">{index + 1}.</span> <strong>{entry.event}</strong> <time dateTime={entry.at}>{entry.at}</time>
          {entry.version !== null ? <span className="hint"> · version {entry.version}</span> : null}
          <span className="hint">
            {' · by '}
            {entry.user_laui ? <UserRef laui={entry.user_laui} /> : 'the service'}
          </span>
          {entry.changed_fields.length > 0 ? <div className="hint">changed: {entry.changed_fields.join(', ')}</div> : null}
          {entry.changes && Object.keys(entry.changes).length > 0 ? (
            <details>
              <summary>Changes</summary>
              <dl className="fields">
                {Object.entries(entry.changes).map(([field, value]) => (
                  <div key={field} className="field-row">
                    <dt>{field}</dt>
                    <dd>
                      <ValueView name={field} value={value} />
                    </dd>
                  </div>
                ))}
              </dl>
            </details>
          ) : null}
        </li>
      ))}
    </ol>
  );
};

interface RevisionRef {
  laui: string;
  item_laui: string;
  version: number;
}

type Revision = Record<string, unknown>;

const CHANGE_LABEL: Record<FieldChange['change'], string> = { added: 'added', removed: 'removed', changed: 'changed' };

/** The field diff of one revision against the one before it. */
const RevisionDiff = ({ version, previous, revision, changes }: { version: number; previous: number | null; revision: Revision; changes: FieldChange[] }) => (
  <div className="table-scroll" tabIndex={0} role="region" aria-label={`Changes in version ${version}`}>
    <table className="results diff">
      <caption>
        {previous === null ? `Version ${version}: the first, as created` : `Version ${version} against version ${previous}`}
        {typeof revision.updated_by === 'string' ? (
          <span className="hint">
            {' · by '}
            <UserRef laui={revision.updated_by} />
          </span>
        ) : null}
        {typeof revision.created_at === 'string' ? (
          <span className="hint">
            {' · '}
            <time dateTime={revision.created_at}>{revision.created_at}</time>
          </span>
        ) : null}
      </caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">{previous === null ? 'Before' : `Version ${previous}`}</th>
          <th scope="col">{`Version ${version}`}</th>
        </tr>
      </thead>
      <tbody>
        {changes.length === 0 ? (
          <tr>
            <td colSpan={3} className="hint">
              No field changed (only the revision's author and time).
            </td>
          </tr>
        ) : (
          changes.map((change) => (
            <tr key={change.field} className={`diff-${change.change}`} data-field={change.field}>
              <th scope="row">
                {change.field} <span className="hint">{CHANGE_LABEL[change.change]}</span>
              </th>
              <td className="diff-before">{change.change === 'added' ? <span className="hint">—</span> : <ValueView name={change.field} value={change.before} />}</td>
              <td className="diff-after">{change.change === 'removed' ? <span className="hint">—</span> : <ValueView name={change.field} value={change.after} />}</td>
            </tr>
          ))
        )}
      </tbody>
    </table>
  </div>
);

/**
 * GET /catalog/get/item_revisions: the versions of an item; the chosen one (the latest at first)
 * shows as a field diff against the version before it, its whole record folded below.
 */
export const ItemRevisions = ({ laui }: { laui: string }) => {
  const list = useApi((signal) => api<RevisionRef[]>(`/api/v1/catalog/get/item_revisions?${query({ item_laui: laui })}`, { signal }), [laui]);
  const [version, setVersion] = useState<number | null>(null);
  const versions = list.data?.map((entry) => entry.version) ?? [];
  const shown = version ?? versions.at(-1) ?? null;
  const position = shown === null ? -1 : versions.indexOf(shown);
  const previous = position > 0 ? (versions[position - 1] as number) : null;
  const revisions = useApi(async (signal) => {
    if (shown === null) return null;
    const revision = (at: number) => api<Revision>(`/api/v1/catalog/get/item_revisions?${query({ item_laui: laui, version: at })}`, { signal });
    const [after, before] = await Promise.all([revision(shown), previous === null ? Promise.resolve(null) : revision(previous)]);
    return { after, before, version: shown, previous };
  }, [laui, shown, previous]);
  useEffect(() => setVersion(null), [laui]);

  if (list.error) return <Notice kind="error">{list.error}</Notice>;
  if (!list.data) return <p className="hint">Loading revisions…</p>;
  const current = revisions.data?.version === shown ? revisions.data : null;
  return (
    <div className="revisions">
      <ul className="chips" aria-label="Versions">
        {list.data.map((entry) => (
          <li key={entry.laui}>
            <button type="button" aria-pressed={shown === entry.version} onClick={() => setVersion(entry.version)}>
              Version {entry.version}
            </button>
          </li>
        ))}
      </ul>
      {revisions.error ? <Notice kind="error">{revisions.error}</Notice> : null}
      {current ? (
        <>
          <RevisionDiff version={current.version} previous={current.previous} revision={current.after} changes={fieldDiff(current.before, current.after)} />
          <details>
            <summary>All fields of version {current.version}</summary>
            <pre className="json" aria-label={`Version ${current.version}`}>
              {JSON.stringify(current.after, null, 2)}
            </pre>
          </details>
        </>
      ) : shown !== null ? (
        <p className="hint">Loading version {shown}…</p>
      ) : null}
    </div>
  );
};
