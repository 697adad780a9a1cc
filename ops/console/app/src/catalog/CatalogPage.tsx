import { useEffect, useSyncExternalStore } from 'react';
import { Notice } from '../shell/Notice.tsx';
import { NewAccount } from './NewAccount.tsx';
import { CatalogTree } from './CatalogTree.tsx';
import { ItemView } from './ItemView.tsx';
import type { TreeStore } from './TreeStore.ts';
import type { ItemTypeInfo } from './types.ts';

/** The catalog: the tree on one side, the selected item on the other (stacked on narrow screens). */
export const CatalogPage = ({ store, types, selected }: { store: TreeStore; types: Map<string, ItemTypeInfo>; selected: string | null }) => {
  useSyncExternalStore(store.subscribe, store.getVersion);
  useEffect(() => {
    if (!store.rootsLoaded()) void store.loadRoots();
  }, [store]);
  const rootsError = store.rootsError();
  return (
    <div className={`catalog${selected ? ' has-selection' : ''}`}>
      <nav className="tree-pane" aria-label="Catalog tree">
        <h2 className="pane-title" id="tree-heading">
          Catalog
        </h2>
        {rootsError ? <Notice kind="error">{rootsError}</Notice> : null}
        <CatalogTree store={store} selected={selected} />
      </nav>
      <section className="detail-pane" aria-label="Item">
        {selected ? (
          <ItemView key={selected} laui={selected} store={store} types={types} />
        ) : (
          <div className="welcome">
            <h2>Catalog</h2>
            <p>
              Pick an item in the tree (arrow keys move, Right opens a folder, Enter shows the item). A new account starts with{' '}
              <code>POST /api/v1/catalog/bootstrap</code> or the <strong>New account</strong> button below.
            </p>
            <NewAccount store={store} />
          </div>
        )}
      </section>
    </div>
  );
};
