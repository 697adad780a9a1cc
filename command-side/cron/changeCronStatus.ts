import { notFound } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { Decider } from '../kernel/Decider.ts';
import { handleCommand } from '../kernel/handleCommand.ts';
import { cronEventOf } from '../../shared/task/cronEvents.ts';
import { itemDecider } from '../catalog/decide.ts';
import { itemStream, SERVICE_ACTOR, type ItemState } from '../catalog/item.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import { cronStatusOf, decideCron, type CronCommand, type CronContext, type FolderMetadata } from './cronLifecycle.ts';

interface CronStatusCommand {
  cron: CronCommand;
  context: CronContext;
  revisionLaui: Laui;
}

/**
 * The status decision is taken on the project stream's fresh state and appended at the revision it
 * read (handleCommand), so two concurrent STARTs cannot both pass the "already running" check: the
 * second is decided again on the first one's STARTED and gets 409. folder_metadata is replaced as a
 * whole by the named cron event (CronStarted, CronStopped...), so the new object is the current one with the decided fields merged in.
 * The change is not versioned (folder_metadata is a runtime field: docs/decisions.md).
 */
export const cronStatusDecider: Decider<ItemState, CronStatusCommand, ItemEvent> = {
  initialState: itemDecider.initialState,
  evolve: itemDecider.evolve,
  decide: (command, state) => {
    if (state.status !== 'live' || state.itemType !== 'folder.project') throw notFound('Item not found');
    const current = (state.fields.folder_metadata as FolderMetadata | undefined) ?? {};
    const patch = decideCron(command.cron, current, command.context);
    if (patch === null) return [];
    const decided = itemDecider.decide(
      {
        kind: 'update',
        actor: SERVICE_ACTOR,
        laui: state.laui,
        changes: { folder_metadata: { ...current, ...patch } },
        versionedFields: [],
        expectedVersion: null,
        access: null,
        revisionLaui: command.revisionLaui,
      },
      state,
    );
    // Every status change is its named event (CronStarted...), carrying the new folder_metadata.
    const named = cronEventOf(patch.cron_status);
    return decided.map((event) =>
      event.type === 'ItemUpdated' && named !== null ? { type: named, data: { from: cronStatusOf(current), to: String(patch.cron_status), ...event.data } } : event,
    );
  },
};

export interface CronStatusChange {
  /** The status before the command, as decided on (null when none was set). */
  before: string | null;
  after: string | null;
  position: Position | null;
}

export const changeCronStatus = async (
  eventStore: EventStore,
  projectLaui: Laui,
  cron: CronCommand,
  context: CronContext,
  metadata: EventMetadata,
): Promise<CronStatusChange> => {
  let before: string | null = null;
  const observing: Decider<ItemState, CronStatusCommand, ItemEvent> = {
    ...cronStatusDecider,
    decide: (command, state) => {
      before = state.status === 'none' ? null : cronStatusOf(state.fields.folder_metadata);
      return cronStatusDecider.decide(command, state);
    },
  };
  const result = await handleCommand({ eventStore, streamId: itemStream(projectLaui), decider: observing, command: { cron, context, revisionLaui: newLaui(context.now) }, metadata });
  const after = result.state.status === 'none' ? null : cronStatusOf(result.state.fields.folder_metadata);
  return { before, after, position: result.position };
};
