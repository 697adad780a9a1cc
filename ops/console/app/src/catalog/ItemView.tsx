import { useEffect, useState } from 'react';
import { api, errorText, query } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { Tabs } from '../shell/Tabs.tsx';
import { useApi } from '../shell/useApi.ts';
import { itemPath, navigate } from '../router.ts';
import { TaskPanel } from '../task/TaskPanel.tsx';
import { CronPanel } from '../project/CronPanel.tsx';
import { QueuesPanel } from '../project/QueuesPanel.tsx';
import { ConnectionPanel } from '../project/ConnectionPanel.tsx';
import { ItemDetails } from './ItemDetails.tsx';
import { ItemHistory, ItemRevisions } from './ItemHistory.tsx';
import { NewItem } from './NewItem.tsx';
import { ItemForm } from './ItemForm.tsx';
import { typeInfo } from './itemTypes.ts';
import { rememberItem } from './itemNames.ts';
import type { TreeStore } from './TreeStore.ts';
import { baseOf, type Item, type ItemTypeInfo } from './types.ts';

type Mode = 'view' | 'edit' | 'new';

/** One catalog item: what it is, what can be done with it (run, schedule, inspect), its past. */
export const ItemView = ({ laui, store, types }: { laui: string; store: TreeStore; types: Map<string, ItemTypeInfo> }) => {
  const loaded = useApi((signal) => api<Item>(`/api/v1/catalog/get?${query({ item_laui: laui })}`, { signal }), [laui]);
  const [mode, setMode] = useState<Mode>('view');
  const [tab, setTab] = useState('details');
  const [notice, setNotice] = useState<{ kind: 'error' | 'success'; text: string } | null>(null);

  useEffect(() => {
    setMode('view');
    setNotice(null);
  }, [laui]);

  useEffect(() => {
    void store.reveal(laui).catch(() => undefined);
  }, [laui, store]);

  useEffect(() => {
    if (!loaded.data) return;
    store.update(loaded.data);
    rememberItem(loaded.data);
  }, [loaded.data, store]);

  if (loaded.error) return <Notice kind="error">{loaded.error}</Notice>;
  const item = loaded.data;
  if (!item) return <p className="hint">Loading…</p>;
  const info = typeInfo(types, item.item_type);
  const deleted = Boolean(item.deleted_at);

  const remove = async (): Promise<void> => {
    if (!window.confirm(`Delete ${item.name}? It can be restored.`)) return;
    try {
      await api('/api/v1/catalog/delete', { body: { item_laui: item.laui } });
      await store.refresh(item.parent_laui);
      navigate(item.parent_laui ? itemPath(item.parent_laui) : '/', { replace: true });
    } catch (error) {
      setNotice({ kind: 'error', text: errorText(error) });
    }
  };

  const restore = async (): Promise<void> => {
    try {
      await api(`/api/v1/catalog/restore/${item.laui}`, { method: 'POST' });
      await store.refresh(item.parent_laui);
      loaded.reload();
    } catch (error) {
      setNotice({ kind: 'error', text: errorText(error) });
    }
  };

  if (mode === 'edit' && info) {
    return (
      <ItemForm
        info={info}
        types={types}
        item={item}
        parentLaui={item.parent_laui}
        onCancel={() => setMode('view')}
        onSaved={() => {
          setMode('view');
          setNotice({ kind: 'success', text: 'Saved' });
          loaded.reload();
          void store.refresh(item.parent_laui);
        }}
      />
    );
  }
  if (mode === 'new' && info) {
    return (
      <NewItem
        parent={item}
        allowed={info.allowed_children}
        types={types}
        onCancel={() => setMode('view')}
        onCreated={(created) => {
          void store.refresh(item.laui).then(() => store.expand(item.laui));
          navigate(itemPath(created));
        }}
      />
    );
  }

  const base = baseOf(item.item_type);
  return (
    <article className="item-view" aria-labelledby="item-heading">
      <header className="item-header">
        <h2 id="item-heading" tabIndex={-1}>
          {item.name}
        </h2>
        <span className="badge">{item.item_type}</span>
        {deleted ? <span className="badge state-cancelled">deleted</span> : null}
        <div className="actions">
          {info && info.allowed_children.length > 0 && !deleted ? (
            <button type="button" className="primary" onClick={() => setMode('new')}>
              New item here
            </button>
          ) : null}
          {info && !deleted ? (
            <button type="button" onClick={() => setMode('edit')}>
              Edit
            </button>
          ) : null}
          {deleted ? (
            <button type="button" onClick={() => void restore()}>
              Restore
            </button>
          ) : (
            <button type="button" className="danger" onClick={() => void remove()}>
              Delete
            </button>
          )}
        </div>
      </header>
      {notice ? <Notice kind={notice.kind}>{notice.text}</Notice> : null}
      {base === 'task' ? <TaskPanel task={item} onChanged={loaded.reload} onPolled={(fresh) => store.update(fresh)} /> : null}
      {item.item_type === 'folder.project' ? (
        <div className="panels">
          <CronPanel projectLaui={item.laui} />
          <QueuesPanel projectLaui={item.laui} />
        </div>
      ) : null}
      {base === 'connection' ? <ConnectionPanel connection={item} /> : null}
      <Tabs
        label="Item"
        current={tab}
        onChange={setTab}
        tabs={[
          { id: 'details', label: 'Details', render: () => <ItemDetails item={item} /> },
          {
            id: 'revisions',
            label: 'Revisions',
            render: () => (
              <ItemRevisions
                laui={item.laui}
                item={item}
                versioned={info?.versioned_fields ?? []}
                onRestored={() => {
                  loaded.reload();
                  void store.refresh(item.parent_laui);
                }}
              />
            ),
          },
          { id: 'history', label: 'History', render: () => <ItemHistory laui={item.laui} /> },
        ]}
      />
    </article>
  );
};
