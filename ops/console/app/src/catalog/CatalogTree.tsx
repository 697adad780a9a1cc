import { useEffect, useLayoutEffect, useRef, useState, useSyncExternalStore, type KeyboardEvent } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { itemPath, navigate } from '../router.ts';
import type { TreeRow, TreeStore } from './TreeStore.ts';

const ROW_HEIGHT = 30;
const rowId = (laui: string): string => `tree-row-${laui}`;

/** After the frame that shows the rows: two animation frames (the first runs before that paint). */
const afterPaint = (callback: () => void): void => {
  requestAnimationFrame(() => requestAnimationFrame(callback));
};

const icon = (row: TreeRow): string => (row.expandable ? (row.expanded ? '▾' : '▸') : '•');

/**
 * The catalog tree (WAI-ARIA tree pattern): one focusable `tree`, rows are `treeitem`s with level,
 * position and size, the active row named by aria-activedescendant. Only the rows in view exist in
 * the page (virtualized), so a folder of 10,000 items costs the same as one of 30.
 * Keys: Up/Down move, Right opens a folder (or goes to its first child), Left closes it (or goes to
 * the parent), Home/End, Enter or Space opens the item's details, letters jump by name.
 */
export const CatalogTree = ({ store, selected }: { store: TreeStore; selected: string | null }) => {
  useSyncExternalStore(store.subscribe, store.getVersion);
  const rows = store.rows();
  const scroller = useRef<HTMLDivElement>(null);
  const [active, setActive] = useState<string | null>(selected);
  const typed = useRef({ text: '', at: 0 });
  const virtualizer = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_HEIGHT, overscan: 12 });

  const activeIndex = Math.max(0, rows.findIndex((row) => row.node.laui === active));
  const activeRow = rows[activeIndex];

  useEffect(() => {
    if (selected !== null) setActive(selected);
  }, [selected]);

  useEffect(() => {
    if (selected !== null) {
      const index = rows.findIndex((row) => row.node.laui === selected);
      if (index >= 0) virtualizer.scrollToIndex(index, { align: 'auto' });
    }
    // Only when the selection changes or its row first appears, not on every load.
  }, [selected, rows.some((row) => row.node.laui === selected)]);

  useLayoutEffect(() => {
    const changes = store.takeChanges();
    if (changes.length === 0) return;
    afterPaint(() => {
      const end = performance.now();
      for (const change of changes) performance.measure(change.label, { start: change.at, end });
    });
  });

  const moveTo = (index: number): void => {
    const row = rows[Math.min(rows.length - 1, Math.max(0, index))];
    if (!row) return;
    setActive(row.node.laui);
    virtualizer.scrollToIndex(rows.indexOf(row), { align: 'auto' });
  };

  const open = (row: TreeRow): void => navigate(itemPath(row.node.laui));

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>): void => {
    const row = activeRow;
    if (!row) return;
    const index = activeIndex;
    let handled = true;
    switch (event.key) {
      case 'ArrowDown':
        moveTo(index + 1);
        break;
      case 'ArrowUp':
        moveTo(index - 1);
        break;
      case 'Home':
        moveTo(0);
        break;
      case 'End':
        moveTo(rows.length - 1);
        break;
      case 'ArrowRight':
        if (row.expandable && !row.expanded) void store.expand(row.node.laui);
        else if (row.expanded && rows[index + 1]?.level === row.level + 1) moveTo(index + 1);
        break;
      case 'ArrowLeft':
        if (row.expanded) store.collapse(row.node.laui);
        else if (row.node.parent_laui !== null) {
          const parent = rows.findIndex((candidate) => candidate.node.laui === row.node.parent_laui);
          if (parent >= 0) moveTo(parent);
        }
        break;
      case 'Enter':
      case ' ':
        open(row);
        break;
      default:
        handled = false;
        if (event.key.length === 1 && !event.ctrlKey && !event.metaKey && !event.altKey) {
          // Type-ahead: the next row whose name starts with what was typed in the last second.
          const now = performance.now();
          typed.current = { text: (now - typed.current.at < 1000 ? typed.current.text : '') + event.key.toLowerCase(), at: now };
          const prefix = typed.current.text;
          const order = [...rows.slice(index + (prefix.length === 1 ? 1 : 0)), ...rows.slice(0, index)];
          const match = order.find((candidate) => candidate.node.name.toLowerCase().startsWith(prefix));
          if (match) moveTo(rows.indexOf(match));
          handled = true;
        }
    }
    if (handled) event.preventDefault();
  };

  const toggle = (row: TreeRow): void => {
    setActive(row.node.laui);
    if (row.expanded) store.collapse(row.node.laui);
    else void store.expand(row.node.laui);
  };

  return (
    <div
      ref={scroller}
      className="tree"
      role="tree"
      aria-label="Catalog"
      tabIndex={0}
      aria-activedescendant={activeRow ? rowId(activeRow.node.laui) : undefined}
      aria-busy={!store.rootsLoaded()}
      onKeyDown={onKeyDown}
      data-rows={rows.length}
    >
      <div className="tree-canvas" style={{ height: virtualizer.getTotalSize() }}>
        {virtualizer.getVirtualItems().map((virtual) => {
          const row = rows[virtual.index];
          if (!row) return null;
          const isActive = row === activeRow;
          return (
            <div
              key={row.node.laui}
              id={rowId(row.node.laui)}
              role="treeitem"
              aria-level={row.level}
              aria-posinset={row.position}
              aria-setsize={row.siblings}
              aria-expanded={row.expandable ? row.expanded : undefined}
              aria-selected={row.node.laui === selected}
              aria-busy={row.loading || undefined}
              className={`tree-row${isActive ? ' active' : ''}${row.node.laui === selected ? ' selected' : ''}`}
              style={{ transform: `translateY(${virtual.start}px)`, paddingLeft: `${(row.level - 1) * 16 + 4}px` }}
              onClick={() => {
                setActive(row.node.laui);
                // A click on a closed folder also opens it; the arrow beside it only toggles.
                if (row.expandable && !row.expanded) void store.expand(row.node.laui);
                open(row);
              }}
            >
              <span
                className="twisty"
                aria-hidden="true"
                onClick={(event) => {
                  event.stopPropagation();
                  if (row.expandable) toggle(row);
                }}
              >
                {icon(row)}
              </span>
              <span className="tree-name">{row.node.name}</span>
              <span className="tree-type">{row.node.item_type}</span>
              {row.node.state ? <span className={`badge state-${row.node.state}`}>{row.node.state}</span> : null}
              {row.loading ? <span className="tree-note">loading…</span> : null}
              {row.error ? <span className="tree-note error">{row.error}</span> : null}
            </div>
          );
        })}
      </div>
    </div>
  );
};
