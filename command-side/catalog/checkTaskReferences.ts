import { forbidden } from '../../shared/errors.ts';
import { isLaui, type Laui } from '../../shared/ids.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import { referencedItems } from '../../shared/task/validateTask.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

/**
 * Access to what a task references (issue 19). A task hands its connection's content to its
 * operator's code, with its payload, configs and actions: whoever creates, changes or runs it must
 * be able to VIEW every one of them, or a task would read a connection its author cannot see.
 * Checked at creation, at every change, at every run (HTTP or scheduled) and again by the worker
 * for the items that reach code (connection, operator): access can be revoked in between.
 */

/** The items of a task that need VIEW: operator, connection, payload, attached configs, actions and the literal connections of its action references. */
export const taskReferenceLauis = (task: Readonly<Record<string, unknown>>): Laui[] => {
  const lauis = new Set<Laui>();
  // The parent workflow is not a reference: creating under it needs EDIT on it (catalog rule).
  for (const { kind, laui } of referencedItems(task)) if (kind !== 'workflow') lauis.add(laui);
  const actions = task.actions;
  if (actions !== null && typeof actions === 'object' && !Array.isArray(actions)) {
    for (const list of Object.values(actions as Record<string, unknown>)) {
      if (!Array.isArray(list)) continue;
      // A templated connection_laui is only known when the hook runs: runHook checks it then.
      for (const reference of list) {
        const connection = reference !== null && typeof reference === 'object' ? (reference as Record<string, unknown>).connection_laui : undefined;
        if (isLaui(connection)) lauis.add(connection);
      }
    }
  }
  return [...lauis];
};

export interface ReferenceChecker {
  /** True when the principal may VIEW the item; an unknown item is not refused here (validation reports it, 422). */
  canView(principal: Principal, laui: Laui): Promise<boolean>;
  /** The task's references the principal cannot VIEW. */
  denied(principal: Principal, task: Readonly<Record<string, unknown>>): Promise<Laui[]>;
  /** 403 `Access denied` unless the principal can VIEW every reference of the task. */
  require(principal: Principal, task: Readonly<Record<string, unknown>>): Promise<void>;
}

/**
 * A checker whose verdicts are kept for its lifetime: make one per request or per scheduler cycle
 * (a cycle checks the same connection and operator for many tasks), never a long-lived one, so that
 * a revoked right is seen by the next request or cycle.
 */
export interface ReferenceCheckDeps {
  access: Pick<AccessControl, 'principals' | 'can' | 'principalOf'>;
  items: Pick<Collection<ItemDoc>, 'peek'>;
}

export const referenceChecker = (deps: ReferenceCheckDeps): ReferenceChecker => {
  const principals = new Map<Laui, Promise<Set<Laui>>>();
  const verdicts = new Map<string, Promise<boolean>>();
  const principalsOf = (principal: Principal) => {
    let found = principals.get(principal.laui);
    if (!found) {
      found = deps.access.principals(principal);
      principals.set(principal.laui, found);
    }
    return found;
  };
  const checker: ReferenceChecker = {
    canView(principal, laui) {
      if (principal.isAdmin) return Promise.resolve(true);
      const key = `${principal.laui}:${laui}`;
      let verdict = verdicts.get(key);
      if (!verdict) {
        verdict = (async () => {
          const item = await deps.items.peek(laui);
          if (!item) return true;
          return deps.access.can(principal, item, 'VIEW', await principalsOf(principal));
        })();
        verdicts.set(key, verdict);
      }
      return verdict;
    },
    async denied(principal, task) {
      const lauis = taskReferenceLauis(task);
      const verdicts = await Promise.all(lauis.map((laui) => checker.canView(principal, laui)));
      return lauis.filter((_, index) => !verdicts[index]);
    },
    async require(principal, task) {
      if ((await checker.denied(principal, task)).length > 0) throw forbidden();
    },
  };
  return checker;
};

/**
 * Whose rights a run acts with (README, Security: "Whose rights a run has"): the user who queued it (`run_by`, written with
 * its queued_for_connection step: the caller of /task/run or multiple_tasks, or for a scheduled run
 * the task's creator), else the task's creator. Null: a task written by the service itself (no user
 * in its metadata); no user can write one, so it runs unchecked.
 */
export const runPrincipalLaui = (task: Readonly<Record<string, unknown>>): Laui | null => {
  if (isLaui(task.run_by)) return task.run_by;
  return isLaui(task.created_by) ? task.created_by : null;
};

/**
 * Why a run may not start on behalf of `userLaui` (null: it may): the user is gone, or cannot VIEW
 * one of the task's references or one of `extra` (the connection a dispatch names). Used where no
 * request carries a principal: the scheduler before it claims a due task, the worker before the
 * connection's content reaches the operator.
 */
export const runRefusal = async (
  deps: ReferenceCheckDeps,
  userLaui: Laui | null,
  task: Readonly<Record<string, unknown>>,
  extra: ReadonlyArray<Laui> = [],
  checker: ReferenceChecker = referenceChecker(deps),
): Promise<string | null> => {
  if (userLaui === null) return null;
  const principal = await deps.access.principalOf(userLaui);
  if (principal === null) return `Access denied: the run's user ${userLaui} no longer exists`;
  const denied = await checker.denied(principal, task);
  for (const laui of extra) if (!denied.includes(laui) && !(await checker.canView(principal, laui))) denied.push(laui);
  if (denied.length === 0) return null;
  return `Access denied: user ${principal.username || principal.laui} cannot VIEW ${denied.join(', ')} (revoked since the task was created or queued?)`;
};
