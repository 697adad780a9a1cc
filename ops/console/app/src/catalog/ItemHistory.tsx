import { useState } from 'react';
import { api, query } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { useApi } from '../shell/useApi.ts';

interface HistoryEntry {
  revision: number;
  event: string;
  at: string;
  user_laui: string | null;
  version: number | null;
  changed_fields: string[];
  changes?: Record<string, unknown>;
}

/** GET /catalog/get/item_history: every event of the item, who and when, and what it changed. */
export const ItemHistory = ({ laui }: { laui: string }) => {
  const { data, error } = useApi((signal) => api<HistoryEntry[]>(`/api/v1/catalog/get/item_history?${query({ item_laui: laui })}`, { signal }), [laui]);
  if (error) return <Notice kind="error">{error}</Notice>;
  if (!data) return <p className="hint">Loading history…</p>;
  return (
    <ol className="history" reversed>
      {[...data].reverse().map((entry) => (
        <li key={entry.revision}>
          <strong>{entry.event}</strong> <time dateTime={entry.at}>{entry.at}</time>
          {entry.version !== null ? <span className="hint"> · version {entry.version}</span> : null}
          {entry.user_laui ? <span className="hint"> · by {entry.user_laui}</span> : null}
          {entry.changed_fields.length > 0 ? <div className="hint">changed: {entry.changed_fields.join(', ')}</div> : null}
          {entry.changes && Object.keys(entry.changes).length > 0 ? (
            <details>
              <summary>Changes</summary>
              <pre className="json">{JSON.stringify(entry.changes, null, 2)}</pre>
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

/** GET /catalog/get/item_revisions: the versions of an item; one opens as it was then. */
export const ItemRevisions = ({ laui }: { laui: string }) => {
  const list = useApi((signal) => api<RevisionRef[]>(`/api/v1/catalog/get/item_revisions?${query({ item_laui: laui })}`, { signal }), [laui]);
  const [version, setVersion] = useState<number | null>(null);
  const revision = useApi(
    (signal) => (version === null ? Promise.resolve(null) : api<Record<string, unknown>>(`/api/v1/catalog/get/item_revisions?${query({ item_laui: laui, version })}`, { signal })),
    [laui, version],
  );
  if (list.error) return <Notice kind="error">{list.error}</Notice>;
  if (!list.data) return <p className="hint">Loading revisions…</p>;
  return (
    <div className="revisions">
      <ul className="chips" aria-label="Versions">
        {list.data.map((entry) => (
          <li key={entry.laui}>
            <button type="button" aria-pressed={version === entry.version} onClick={() => setVersion(entry.version)}>
              Version {entry.version}
            </button>
          </li>
        ))}
      </ul>
      {revision.error ? <Notice kind="error">{revision.error}</Notice> : null}
      {revision.data ? <pre className="json" aria-label={`Version ${version ?? ''}`}>{JSON.stringify(revision.data, null, 2)}</pre> : null}
    </div>
  );
};
