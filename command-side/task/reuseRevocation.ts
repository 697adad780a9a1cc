import type { EventHeader, EventStore, Position, RecordedEvent, Subscription } from '../../shared/event-store/EventStore.ts';
import type { Laui } from '../../shared/ids.ts';
import type { CodeRunner, ReuseScope } from '../../shared/ports/CodeRunner.ts';
import type { Logger } from '../../shared/ports/Logger.ts';

/**
 * What a domain event takes away from reuse processes. A reuse process belongs to a scope: a code
 * item (operator or action) and the user its runs act as (shared/ports/CodeRunner.ts, ReuseScope).
 * It may keep serving only while that user may still run that item as it was: the events below
 * end it ("dies with its owner's revocation"). Runs check access themselves before they start;
 * this is about the process that outlives a run and what an earlier run left in it.
 */
export type Revocation =
  /** Every process acting as the user: any change of the user (password, role; a disable or delete when they exist). */
  | { kind: 'user'; userLaui: Laui }
  /** Every process acting as the principal or as a member of it (a group, nested groups included): it left a group. */
  | { kind: 'membership'; principalLaui: Laui }
  /** Every process of the item: the item was changed (its fields, `reuse_process` included). */
  | { kind: 'item'; itemLaui: Laui }
  /** Every process of the item or of an item under it (access is inherited down the tree): access changed, or it was deleted. */
  | { kind: 'subtree'; itemLaui: Laui };

const USER = 'user-';
const GROUP = 'group-';
const ITEM = 'item-';
/** Item events that edit the item's fields (not a task's lifecycle, which changes no code nor credential). */
const FIELD_EDITS = new Set(['ItemUpdated', 'ItemRevisionRestored']);
/** Item events that change who may use the item and everything under it. */
const SUBTREE_EVENTS = new Set(['ItemAccessChanged', 'ItemSoftDeleted', 'ItemHardDeleted']);

/**
 * The revocation an event means, or null. Decided on the event alone (stream and type):
 * - `user-<laui>`, any event but UserCreated: the user's processes;
 * - `group-<laui>` GroupAccessRevoked: the processes of the principal that lost its role in the
 *   group, and of its members when it is a group (GroupDeleted comes after a revocation of every
 *   grant in the same commit, so it needs nothing of its own);
 * - `item-<laui>` ItemUpdated and ItemRevisionRestored (an edit back to an earlier revision): the
 *   item's processes (a changed code loads afresh anyway; a changed `reuse_process`, connection or
 *   any other field must not keep the process either);
 * - `item-<laui>` ItemAccessChanged, ItemSoftDeleted, ItemHardDeleted: the processes of the item
 *   and of every item under it (an ancestor's access is inherited).
 * Grants (UserCreated, GroupAccessGranted, ItemCreated, ItemRestored), a task's lifecycle events
 * and links (soft references: a true parent is fixed at creation) revoke nothing.
 */
/** Whether an event may revoke anything, judged on its stream and type alone (before it is decoded). */
export const mayRevoke = ({ streamId, type }: Pick<EventHeader, 'streamId' | 'type'>): boolean => {
  if (streamId.startsWith(USER)) return type !== 'UserCreated';
  if (streamId.startsWith(GROUP)) return type === 'GroupAccessRevoked';
  return streamId.startsWith(ITEM) && (FIELD_EDITS.has(type) || SUBTREE_EVENTS.has(type));
};

export const revocationOf = (event: Pick<RecordedEvent, 'streamId' | 'type' | 'data'>): Revocation | null => {
  const { streamId, type } = event;
  if (streamId.startsWith(USER)) return type === 'UserCreated' ? null : { kind: 'user', userLaui: streamId.slice(USER.length) };
  if (streamId.startsWith(GROUP)) {
    const principal = (event.data as { principal_laui?: unknown }).principal_laui;
    return type === 'GroupAccessRevoked' && typeof principal === 'string' ? { kind: 'membership', principalLaui: principal } : null;
  }
  if (!streamId.startsWith(ITEM)) return null;
  const itemLaui = streamId.slice(ITEM.length);
  if (FIELD_EDITS.has(type)) return { kind: 'item', itemLaui };
  return SUBTREE_EVENTS.has(type) ? { kind: 'subtree', itemLaui } : null;
};

/** Item parent chains are short; the bound stops a corrupted (cyclic) one (as the access control's). */
const MAX_DEPTH = 64;

export interface ReuseRevocationDeps {
  runner: Pick<CodeRunner, 'reuseScopes' | 'retire'>;
  /** The item's true parent as the read model has it (null: a root, or unknown). */
  parentOf(itemLaui: Laui): Promise<Laui | null>;
  /** The groups a principal belongs to, directly or through nested groups. */
  groupsOf(principalLaui: Laui): Promise<Set<Laui>>;
}

/**
 * Which scopes a revocation ends, among those holding processes now: null when none does. The
 * lookups (ancestors, groups) are made for the scopes that hold processes only, a handful.
 */
export const revokedScopes = async (deps: ReuseRevocationDeps, revocation: Revocation): Promise<((scope: ReuseScope) => boolean) | null> => {
  const scopes = deps.runner.reuseScopes();
  // Most events (a task's own ItemUpdated) concern no scope: nothing to retire.
  const match = scopes.length === 0 ? null : await matcher(deps, scopes, revocation);
  return match && scopes.some(match) ? match : null;
};

const matcher = async (deps: ReuseRevocationDeps, scopes: ReuseScope[], revocation: Revocation): Promise<(scope: ReuseScope) => boolean> => {
  switch (revocation.kind) {
    case 'user':
      return (scope) => scope.actorLaui === revocation.userLaui;
    case 'item':
      return (scope) => scope.itemLaui === revocation.itemLaui;
    case 'subtree': {
      const under = new Set<Laui>([revocation.itemLaui]);
      for (const item of new Set(scopes.map((scope) => scope.itemLaui))) {
        if (await hasAncestor(deps, item, revocation.itemLaui)) under.add(item);
      }
      return (scope) => under.has(scope.itemLaui);
    }
    case 'membership': {
      const members = new Set<Laui>([revocation.principalLaui]);
      for (const actor of new Set(scopes.map((scope) => scope.actorLaui))) {
        if ((await deps.groupsOf(actor)).has(revocation.principalLaui)) members.add(actor);
      }
      return (scope) => members.has(scope.actorLaui);
    }
  }
};

const hasAncestor = async (deps: ReuseRevocationDeps, itemLaui: Laui, ancestor: Laui): Promise<boolean> => {
  let parent = await deps.parentOf(itemLaui);
  for (let depth = 0; parent !== null && depth < MAX_DEPTH; depth += 1) {
    if (parent === ancestor) return true;
    parent = await deps.parentOf(parent);
  }
  return false;
};

/** How long a failed subscription waits before it follows the log again from where it was. */
const RESUBSCRIBE_MS = 1000;

/**
 * Follows the event log from its head (no reuse process exists before this starts) and retires the
 * reuse processes each revocation ends: idle ones at once, running ones after their run
 * (CodeRunner.retire). A failed subscription is logged and resumed after the last event it
 * handled, so no revocation is skipped. Every process that runs code follows the log this way.
 */
export const followReuseRevocations = async (deps: ReuseRevocationDeps & { eventStore: EventStore; logger: Logger }): Promise<Subscription> => {
  let position: Position = await deps.eventStore.headPosition();
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let current: Subscription;
  const handle = async (event: RecordedEvent): Promise<void> => {
    const revocation = revocationOf(event);
    if (revocation !== null) {
      try {
        const match = await revokedScopes(deps, revocation);
        // Not waited for: the idle processes' exit must not hold up the next event.
        if (match) void deps.runner.retire(match).catch(() => {});
      } catch (error) {
        deps.logger.log({ level: 'error', category: 'CELERY', message: `Retiring reuse processes after ${event.type} on ${event.streamId} failed: ${String(error)}` });
      }
    }
    position = event.position;
  };
  const follow = (): void => {
    current = deps.eventStore.subscribeToAll({
      after: position,
      // A task's lifecycle events, most of the log, are not decoded for this follower.
      accepts: mayRevoke,
      onEvent: handle,
      onError: (error) => {
        deps.logger.log({ level: 'critical', category: 'CELERY', message: `Following revocations for reuse processes failed, resuming: ${String(error)}` });
        if (closed) return;
        clearTimeout(retry);
        retry = setTimeout(() => {
          void current.close().catch(() => {});
          if (!closed) follow();
        }, RESUBSCRIBE_MS);
      },
    });
  };
  follow();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await current.close();
    },
  };
};
