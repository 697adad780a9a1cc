import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { WrongExpectedVersionError } from '../../shared/event-store/EventStore.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { Backfill } from '../../shared/task/backfill/backfillState.ts';
import { INITIAL_STATE } from '../../shared/task/transitions.ts';
import { handleCommand } from '../kernel/handleCommand.ts';
import { itemDecider } from '../catalog/decide.ts';
import { itemCreationEvents } from '../catalog/itemCreatedEvent.ts';
import { itemStream, SERVICE_ACTOR, type ItemState } from '../catalog/item.ts';
import { itemStatesOf } from '../catalog/itemStates.ts';
import { currentTaskState } from '../task/changeTask.ts';

/**
 * Lanes of a backfill (issue 36). A task holds one run at a time (its state, session and logical
 * date are one), so a backfill with max_active_runs N runs its steps on N runners: the task itself
 * and N - 1 lanes, each a copy of the task made for this backfill. A lane is a task like any other
 * for the run pipeline (connection queue and max_parallelism, worker, reaper, hooks): its runs are
 * its own stream's events, naming the backfill as the task's do. It is marked `backfill_lane_of`
 * (the task's LAUI): the scheduler never runs it on the cron, and the driver soft-deletes it once the
 * backfill completes (its stream keeps the history). It stands beside the task, with the task's
 * access, so whoever may see the task may see its lanes and nobody else.
 */
export const LANE_MARKER = 'backfill_lane_of';

export const isBackfillLane = (doc: Readonly<Record<string, unknown>>): boolean => typeof doc[LANE_MARKER] === 'string';

/** What a task's runs wrote on it: a lane starts without them (its first run starts from `scheduled`). */
const RUN_FIELDS = [
  'state',
  'user_set_state',
  'iteration',
  'retry_number',
  'duration',
  'last_run_date',
  'last_system_updated_date',
  'latest_heartbeat',
  'last_run_output',
  'last_run_session_id',
  'session_id',
  'task_instance',
  'executor',
  'actions_status',
  'task_instance_start_date',
  'task_instance_end_date',
  'data_interval_start',
  'data_interval_end',
  'backfill_id',
  'backfill_resume',
  'backfill_schedule_state',
  'execution_result_id',
] as const;

type LiveItem = Extract<ItemState, { laui: string }>;

/** The lane's fields: what the task is (operator, connection, payload, configs, hooks, schedule), none of its runs. */
export const laneFields = (task: LiveItem, backfillId: Laui, lane: number): Record<string, unknown> => {
  const fields: Record<string, unknown> = { ...task.fields };
  for (const field of RUN_FIELDS) delete fields[field];
  return { ...fields, state: INITIAL_STATE, user_set_state: null, iteration: 0, retry_number: 0, [LANE_MARKER]: task.laui, backfill_lane: { backfill_id: backfillId, lane } };
};

export const laneName = (task: LiveItem, backfillId: Laui, lane: number): string => `${task.name} (backfill ${backfillId}, lane ${lane})`;

/**
 * Creates lane `lane` of the backfill as `laneLaui`, after BackfillLaneOpened named it (a driver that
 * stopped between the two creates it at its next pass: an existing stream is the lane already made).
 */
export const createLane = async (
  deps: { eventStore: EventStore; items: Collection<ItemDoc> },
  task: LiveItem,
  backfill: Backfill,
  lane: number,
  laneLaui: Laui,
  metadata: EventMetadata,
): Promise<void> => {
  const parent = task.parentLaui === null ? null : await deps.items.peek(task.parentLaui);
  const events = itemCreationEvents({
    laui: laneLaui,
    itemType: task.itemType,
    name: laneName(task, backfill.id, lane),
    parent: parent === null ? null : { laui: parent.laui, type: parent.item_type },
    fields: laneFields(task, backfill.id, lane),
    access: task.access,
    metadata,
    actor: SERVICE_ACTOR,
  });
  try {
    await deps.eventStore.append(itemStream(laneLaui), events, 'no_stream');
  } catch (error) {
    if (!(error instanceof WrongExpectedVersionError)) throw error;
  }
};

/** Soft-deletes the backfill's lanes still live (the backfill completed); idempotent. */
export const closeLanes = async (deps: { eventStore: EventStore }, backfill: Backfill, metadata: EventMetadata): Promise<void> => {
  for (const laui of backfill.lanes) {
    if ((await currentTaskState(deps.eventStore, laui)).status !== 'live') continue;
    // Decided on the state just loaded (the same cache), not on a second read of the stream.
    await handleCommand({ eventStore: deps.eventStore, streamId: itemStream(laui), decider: itemDecider, command: { kind: 'soft-delete', actor: SERVICE_ACTOR, laui, at: metadata.at }, metadata, cache: itemStatesOf(deps.eventStore) });
  }
};
