import { useEffect } from 'react';
import { api, query } from '../api.ts';
import { Notice } from '../shell/Notice.tsx';
import { useApi } from '../shell/useApi.ts';
import { itemPath, followLink } from '../router.ts';
import type { Item, Page } from '../catalog/types.ts';

type Nested = Item & { children?: Nested[] };

/** Folders of a project where connections live (spec 2.2): the connection and workflow trees. */
const HOLDS_CONNECTIONS = new Set(['folder.connection', 'folder.workflow']);

const connectionsIn = (items: Nested[], into: Item[] = []): Item[] => {
  for (const item of items) {
    if (item.item_type === 'connection' || item.item_type.startsWith('connection.')) into.push(item);
    if (item.children) connectionsIn(item.children, into);
  }
  return into;
};

/** A project's connection queues (spec 2.6): each connection's parallelism and waiting tasks. */
export const QueuesPanel = ({ projectLaui }: { projectLaui: string }) => {
  const loaded = useApi(async (signal) => {
    const children = await api<Page<Item>>(`/api/v1/catalog/get?${query({ item_laui: projectLaui, parent_or_child: 'child', per_page: 1000, is_deleted: false })}`, { signal });
    const found: Item[] = [];
    for (const folder of children.items.filter((child) => HOLDS_CONNECTIONS.has(child.item_type))) {
      const tree = await api<Page<Nested>>(
        `/api/v1/catalog/get?${query({ item_laui: folder.laui, parent_or_child: 'child', depth: 4, per_page: 1000, is_deleted: false })}`,
        { signal },
      );
      connectionsIn(tree.items, found);
    }
    return found;
  }, [projectLaui]);
  const { reload } = loaded;
  useEffect(() => {
    const timer = setInterval(reload, 5000);
    return () => clearInterval(timer);
  }, [reload]);

  return (
    <section className="panel" aria-labelledby="queues-heading">
      <h3 id="queues-heading">Connection queues</h3>
      {loaded.error ? <Notice kind="error">{loaded.error}</Notice> : null}
      {loaded.data && loaded.data.length === 0 ? <p className="hint">No connections in this project yet.</p> : null}
      {loaded.data && loaded.data.length > 0 ? (
        <div className="table-scroll" tabIndex={0} role="region" aria-label="Connection queues">
          <table className="results">
            <thead>
              <tr>
                <th scope="col">Connection</th>
                <th scope="col">Running</th>
                <th scope="col">Waiting</th>
                <th scope="col">Max parallelism</th>
              </tr>
            </thead>
            <tbody>
              {loaded.data.map((connection) => (
                <tr key={connection.laui}>
                  <th scope="row">
                    <a href={itemPath(connection.laui)} onClick={followLink}>
                      {connection.name}
                    </a>
                  </th>
                  <td>{String(connection.current_parallelism ?? 0)}</td>
                  <td>{String(connection.in_queue ?? 0)}</td>
                  <td>{String(connection.max_parallelism ?? '—')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <button type="button" onClick={reload} disabled={loaded.loading}>
        Refresh
      </button>
    </section>
  );
};
