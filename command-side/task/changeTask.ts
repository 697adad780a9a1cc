import type { EventMetadata } from '../../shared/events.ts';
import type { Position, EventStore } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import { decideOnCache, handleCommand, inSequence, loadRevision } from '../kernel/handleCommand.ts';
import type { CompanionAppend } from '../kernel/CompanionAppend.ts';
import { itemDecider } from '../catalog/decide.ts';
import { itemStream, SERVICE_ACTOR, type ItemState } from '../catalog/item.ts';
import { itemStatesOf } from '../catalog/itemStates.ts';
import type { TaskChangeReason } from '../catalog/taskLifecycle.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';

/**
 * Task state and runtime fields change through the item's own stream, so the task's history shows
 * every transition, each as its named event (the task decider, ./decide.ts, inside the item's).
 * Runtime fields are not versioned; definition fields are.
 */
const steps = inSequence(itemDecider);

/** One change, or several consecutive transitions written in one commit (each its own event). */
type TaskChanges = Record<string, unknown> | ReadonlyArray<Record<string, unknown>>;

/**
 * The changes, or how to make them from the task as the commit is decided on (a run's terminal
 * changes: the next logical date follows the stream's current one, whatever happened since the
 * caller last looked). A function is called at each decision, the committed one last.
 */
export type ChangesOf = TaskChanges | ((state: ItemState) => TaskChanges);

type TaskCommand = ReturnType<typeof taskCommands>[number];

/** Decides the commands a builder makes from the state they are decided on. */
const stepsOn = {
  initialState: steps.initialState,
  evolve: steps.evolve,
  decide: (build: (state: ItemState) => TaskCommand[], state: ItemState) => steps.decide(build(state), state),
};

const commandsOf = (taskLaui: Laui, changes: ChangesOf, metadata: EventMetadata, onlyIfStateIn: ReadonlyArray<string> | undefined, trigger?: TaskChangeReason) => (state: ItemState) =>
  taskCommands(taskLaui, typeof changes === 'function' ? changes(state) : changes, metadata, onlyIfStateIn, trigger);

const taskCommands = (taskLaui: Laui, changes: TaskChanges, metadata: EventMetadata, onlyIfStateIn: ReadonlyArray<string> | undefined, trigger?: TaskChangeReason) => {
  const versionedFields = resolveItemType('task')?.versionedFields ?? [];
  return (Array.isArray(changes) ? changes : [changes]).map((change: Record<string, unknown>) => ({
    kind: 'update' as const,
    actor: SERVICE_ACTOR,
    laui: taskLaui,
    changes: change,
    versionedFields,
    expectedVersion: null,
    access: null,
    revisionLaui: newLaui(new Date(metadata.at)),
    onlyIfStateIn,
    trigger,
  }));
};

/** One change, or several consecutive transitions written in one commit (each its own event). */
export const changeTask = async (
  eventStore: EventStore,
  taskLaui: Laui,
  changes: ChangesOf,
  metadata: EventMetadata,
  onlyIfStateIn?: ReadonlyArray<string>,
  /** The state table's row a state change goes through, for the rows only their trigger may take (dangerously_reset), or a pre-action's skip. */
  trigger?: TaskChangeReason,
): Promise<Position | null> => {
  const build = commandsOf(taskLaui, changes, metadata, onlyIfStateIn, trigger);
  const result = await handleCommand({ eventStore, streamId: itemStream(taskLaui), decider: stepsOn, command: build, metadata, cache: itemStatesOf(eventStore) });
  return result.position;
};

/** The task as its stream holds it now: the folded-state cache and what follows it, never the read model. */
export const currentTaskState = async (eventStore: EventStore, taskLaui: Laui): Promise<ItemState> =>
  (await loadRevision(eventStore, itemStream(taskLaui), steps, itemStatesOf(eventStore))).state;

/**
 * A task's document as its stream holds it: the stream's fields over the read model's document,
 * which only adds what the stream's fields do not hold (created_at, created_by...), with `over`
 * (changes about to be written with it) on top, in the same one copy. Null when the task is not
 * live, or not yet in the read model.
 */
export const taskViewOf = (stored: ItemDoc | null, state: ItemState, over: Record<string, unknown> | null = null): ItemDoc | null =>
  stored === null || state.status !== 'live'
    ? null
    : { ...stored, ...state.fields, laui: state.laui, name: state.name, item_type: state.itemType, parent_laui: state.parentLaui, ...over };

/**
 * The same change planned as a companion of another stream's decision (a queue commit), to commit
 * with it (commit.ts), decided as decideOnCache decides (the cached state unless `fresh`); null
 * means nothing to write. `committed` gets the position of the task's last event; `failed`, why it
 * could not be written after the other stream's events were (a store without multi-stream
 * transactions: the change is then its own append, planned again on a fresh read after a conflict).
 */
export const taskChangeCompanion = async (
  eventStore: EventStore,
  taskLaui: Laui,
  changes: ChangesOf,
  metadata: EventMetadata,
  options: {
    fresh: boolean;
    onlyIfStateIn?: ReadonlyArray<string>;
    first?: boolean;
    committed?: (position: Position) => void;
    failed?: (error: unknown) => void;
    /**
     * The task as the change was decided on: what the companion commits only if the stream is still
     * there (its expected revision), so what the caller derives from it holds at the commit.
     */
    decidedOn?: (state: ItemState) => void;
  },
): Promise<CompanionAppend | null> => {
  const cache = itemStatesOf(eventStore);
  const stream = itemStream(taskLaui);
  const build = commandsOf(taskLaui, changes, metadata, options.onlyIfStateIn);
  const { loaded, events, guessed } = await decideOnCache(eventStore, stream, stepsOn, build, cache, options.fresh);
  if (events.length === 0) return null;
  options.decidedOn?.(loaded.state);
  return {
    append: { streamId: stream, events: events.map((event) => ({ type: event.type, data: event.data, metadata })), expected: loaded.revision ?? 'no_stream' },
    guessed,
    first: options.first ?? false,
    again: () => taskChangeCompanion(eventStore, taskLaui, changes, metadata, { ...options, fresh: true }),
    failed: options.failed,
    committed: (result) => {
      let state = loaded.state;
      for (const event of events) state = steps.evolve(state, event);
      cache.set(stream, { revision: result.nextExpectedRevision, state });
      options.committed?.(result.position);
    },
  };
};
