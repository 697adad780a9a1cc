import { api, errorText, query } from '../api.ts';
import { isFolder, type Item, type Page } from './types.ts';

/** What a tree row needs of an item; the rest is fetched when the item is opened. */
export interface TreeNode {
  laui: string;
  name: string;
  item_type: string;
  parent_laui: string | null;
  state?: string;
}

export interface TreeRow {
  node: TreeNode;
  level: number;
  /** 1-based position among its siblings and their count (aria-posinset / aria-setsize). */
  position: number;
  siblings: number;
  expandable: boolean;
  expanded: boolean;
  loading: boolean;
  error: string | null;
}

type Children = { lauis: string[]; complete: boolean; error: string | null };

const ROOT = '';
const PAGE_SIZE = 1000;

/**
 * The catalog as the tree shows it: nodes, each folder's children as far as loaded, and which
 * folders are open. Children load page by page (1,000 a request) and the tree shows each page as it
 * comes, so a folder of 10,000 items shows its first screen after the first page. Lives outside
 * React so that the item views can ask it to reload a folder after a change.
 *
 * Every change that alters the rows is stamped (performance.now()) with what caused it: the tree
 * measures from that stamp to the frame that shows the rows (`catalog-tree:*` performance
 * measures), which the browser tests hold to the console's budget.
 */
export class TreeStore {
  private readonly nodes = new Map<string, TreeNode>();
  private readonly children = new Map<string, Children>();
  private readonly expanded = new Set<string>();
  private readonly loads = new Map<string, AbortController>();
  private readonly listeners = new Set<() => void>();
  private version = 0;
  private rowsCache: { version: number; rows: TreeRow[] } | null = null;
  /** Changes the next painted frame shows, for the performance measures. */
  private pending: Array<{ label: string; at: number }> = [];

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getVersion = (): number => this.version;

  private changed(label: string): void {
    this.version += 1;
    this.pending.push({ label, at: performance.now() });
    for (const listener of this.listeners) listener();
  }

  /** The changes not measured yet; the tree measures each to the frame that shows it. */
  takeChanges(): Array<{ label: string; at: number }> {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  node(laui: string): TreeNode | undefined {
    return this.nodes.get(laui);
  }

  /** The visible rows: a depth-first walk of the open folders. */
  rows(): TreeRow[] {
    if (this.rowsCache?.version === this.version) return this.rowsCache.rows;
    const rows: TreeRow[] = [];
    const walk = (parent: string, level: number): void => {
      const list = this.children.get(parent);
      if (!list) return;
      list.lauis.forEach((laui, index) => {
        const node = this.nodes.get(laui);
        if (!node) return;
        const expandable = isFolder(node.item_type);
        const expanded = expandable && this.expanded.has(laui);
        const own = this.children.get(laui);
        rows.push({
          node,
          level,
          position: index + 1,
          siblings: list.lauis.length,
          expandable,
          expanded,
          loading: expanded && (own === undefined || (!own.complete && own.error === null)),
          error: own?.error ?? null,
        });
        if (expanded) walk(laui, level + 1);
      });
    };
    walk(ROOT, 1);
    this.rowsCache = { version: this.version, rows };
    return rows;
  }

  rootsLoaded(): boolean {
    return this.children.get(ROOT)?.complete === true;
  }

  rootsError(): string | null {
    return this.children.get(ROOT)?.error ?? null;
  }

  isExpanded(laui: string): boolean {
    return this.expanded.has(laui);
  }

  loadRoots(): Promise<void> {
    return this.load(ROOT);
  }

  expand(laui: string): Promise<void> {
    if (!this.expanded.has(laui)) {
      this.expanded.add(laui);
      this.changed('catalog-tree:expand-to-paint');
    }
    return this.children.has(laui) ? Promise.resolve() : this.load(laui);
  }

  collapse(laui: string): void {
    if (this.expanded.delete(laui)) this.changed('catalog-tree:collapse-to-paint');
  }

  /** Reloads a folder's children (after an item was created, renamed or deleted under it). */
  refresh(parentLaui: string | null): Promise<void> {
    return this.load(parentLaui ?? ROOT);
  }

  /**
   * Opens every ancestor of an item, root first, so that the item's row exists; a folder that is
   * shown (navigated to) opens too, so that its contents are in view.
   */
  async reveal(laui: string): Promise<void> {
    if (!this.nodes.has(laui) || !this.ancestorsOpen(laui)) {
      const { items } = await api<Page<Item>>(`/api/v1/catalog/get?${query({ item_laui: laui, parent_or_child: 'parent', depth: 20, per_page: 20 })}`);
      for (const ancestor of items.reverse()) {
        this.remember(ancestor);
        await this.expand(ancestor.laui);
      }
    }
    const node = this.nodes.get(laui);
    if (node && isFolder(node.item_type)) await this.expand(laui);
  }

  private ancestorsOpen(laui: string): boolean {
    let parent = this.nodes.get(laui)?.parent_laui ?? null;
    while (parent !== null) {
      if (!this.expanded.has(parent)) return false;
      parent = this.nodes.get(parent)?.parent_laui ?? null;
    }
    return true;
  }

  /** An item read elsewhere (its view, a task's polling): its row shows the new name and state. */
  update(item: Item): void {
    const known = this.nodes.get(item.laui);
    if (!known) return;
    const state = typeof item.state === 'string' ? item.state : undefined;
    if (known.name === item.name && known.state === state) return;
    this.remember(item);
    this.changed('catalog-tree:update-to-paint');
  }

  private remember(item: Item): TreeNode {
    const node: TreeNode = {
      laui: item.laui,
      name: item.name,
      item_type: item.item_type,
      parent_laui: item.parent_laui ?? null,
      ...(typeof item.state === 'string' ? { state: item.state } : {}),
    };
    this.nodes.set(item.laui, node);
    return node;
  }

  private async load(parent: string): Promise<void> {
    this.loads.get(parent)?.abort();
    const controller = new AbortController();
    this.loads.set(parent, controller);
    const base = parent === ROOT ? { is_root: true } : { item_laui: parent, parent_or_child: 'child' as const };
    const lauis: string[] = [];
    let token: string | null = null;
    try {
      for (;;) {
        const page: Page<Item> = await api<Page<Item>>(
          `/api/v1/catalog/get?${query({ ...base, per_page: PAGE_SIZE, is_deleted: false, ...(token === null ? {} : { page_token: token }) })}`,
          { signal: controller.signal },
        );
        for (const item of page.items) lauis.push(this.remember(item).laui);
        const complete = !page.pagination.has_next || page.pagination.next_page_token === null;
        this.children.set(parent, { lauis: [...lauis], complete, error: null });
        this.changed(lauis.length <= PAGE_SIZE ? 'catalog-tree:data-to-paint' : 'catalog-tree:page-to-paint');
        if (complete) break;
        token = page.pagination.next_page_token;
      }
    } catch (error) {
      if (controller.signal.aborted) return;
      this.children.set(parent, { lauis, complete: false, error: errorText(error) });
      this.changed('catalog-tree:error');
    } finally {
      if (this.loads.get(parent) === controller) this.loads.delete(parent);
    }
  }
}
