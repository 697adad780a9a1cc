import { useEffect, useState, type ReactNode } from 'react';
import { api, errorText, query } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { UserRef } from '../shell/UserRef.tsx';
import { useApi } from '../shell/useApi.ts';
import { fieldDiff, type FieldChange } from './fieldDiff.ts';
import { ValueView } from './ValueView.tsx';
import type { Item } from './types.ts';

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
  <DiffTable
    label={`Changes in version ${version}`}
    caption={
      <>
        {previous === null ? `Version ${version}: the first, as created` : `Version ${version} against version ${previous}`}
        <Authorship revision={revision} />
      </>
    }
    beforeLabel={previous === null ? 'Before' : `Version ${previous}`}
    afterLabel={`Version ${version}`}
    changes={changes}
  />
);

/** Who wrote a revision and when, as its caption says it. */
const Authorship = ({ revision }: { revision: Revision }) => (
  <>
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
  </>
);

/** A field diff as a table: each changed field with its value before and after. */
const DiffTable = ({ label, caption, beforeLabel, afterLabel, changes }: { label: string; caption: ReactNode; beforeLabel: string; afterLabel: string; changes: FieldChange[] }) => (
  <div className="table-scroll" tabIndex={0} role="region" aria-label={label}>
    <table className="results diff">
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">{beforeLabel}</th>
          <th scope="col">{afterLabel}</th>
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

/** The fields a restore brings back (the service's rule): the versioned ones, never the item's project or account. */
const restorable = (versioned: ReadonlyArray<string>, record: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(versioned.filter((field) => field !== 'project_laui' && field !== 'account_laui').map((field) => [field, record[field]]));

/**
 * Restore a revision (POST /catalog/restore_revision): first a preview, the diff of the item as it
 * is against the chosen revision over the fields a restore brings back, then the confirmation. The
 * restore names the version the preview was made on (expected_version): if someone changed the
 * item meanwhile, the service refuses (409) and says so here.
 */
const RestoreRevision = ({ item, versioned, revision, version, onRestored }: { item: Item; versioned: ReadonlyArray<string>; revision: Revision; version: number; onRestored(): void }) => {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    setOpen(false);
    setProblem(null);
  }, [version, item.version]);
  const restore = async (): Promise<void> => {
    setBusy(true);
    setProblem(null);
    try {
      await api('/api/v1/catalog/restore_revision', { body: { item_laui: item.laui, revision_laui: revision.laui, expected_version: item.version } });
      setOpen(false);
      onRestored();
    } catch (error) {
      setProblem(errorText(error));
    } finally {
      setBusy(false);
    }
  };
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)} aria-expanded={false}>
        Restore version {version}…
      </button>
    );
  }
  return (
    <section className="restore-preview" aria-label={`Restore version ${version}`}>
      <DiffTable
        label={`What restoring version ${version} changes`}
        caption={`Restoring version ${version}: the current version ${item.version ?? ''} against version ${version}`}
        beforeLabel={`Now (version ${item.version ?? ''})`}
        afterLabel={`After restore (version ${version})`}
        changes={fieldDiff(restorable(versioned, item), restorable(versioned, revision))}
      />
      <p className="hint">A new version is made with these values; the item's place, access and run state stay as they are.</p>
      {problem ? <Notice kind="error">{problem}</Notice> : null}
      <div className="actions">
        <button type="button" className="primary" disabled={busy} onClick={() => void restore()}>
          Restore version {version}
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </section>
  );
};

/**
 * GET /catalog/get/item_revisions: the versions of an item; the chosen one (the latest at first)
 * shows as a field diff against the version before it, its whole record folded below.
 */
export const ItemRevisions = ({ laui, item, versioned, onRestored }: { laui: string; item?: Item; versioned?: ReadonlyArray<string>; onRestored?: () => void }) => {
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
  const [restored, setRestored] = useState<number | null>(null);

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
      {restored !== null ? <Notice kind="success">Version {restored} restored as a new version</Notice> : null}
      {current ? (
        <>
          {item && versioned && onRestored && !item.deleted_at && current.version !== versions.at(-1) ? (
            <RestoreRevision
              item={item}
              versioned={versioned}
              revision={current.after}
              version={current.version}
              onRestored={() => {
                setRestored(current.version);
                setVersion(null);
                list.reload();
                onRestored();
              }}
            />
          ) : null}
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
