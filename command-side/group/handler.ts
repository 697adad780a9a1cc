import { AppError, writeConflict } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { ReadStore } from '../../shared/read-store/ReadStore.ts';
import { groupsOfPrincipal } from '../../projections/groups/groupsOfPrincipal.ts';
import { handleCommand, loadState } from '../kernel/handleCommand.ts';
import { releaseUniqueKey, reserveUniqueKey, uniqueKeyDecider, uniqueKeyStream } from '../kernel/uniqueKey.ts';
import type { AccessPatch } from './applyAccessPatch.ts';
import { groupDecider } from './decide.ts';
import { groupNameKey, groupStream, type GroupActor, type GroupCommand } from './group.ts';

export interface GroupHandlerDeps {
  eventStore: EventStore;
  /** Membership read model: which groups a caller acts through. */
  readStore: ReadStore;
}

export interface Caller {
  laui: Laui;
  isAdmin: boolean;
}

export interface SaveGroup {
  name: string;
  description?: string;
  access_patch?: AccessPatch;
}

/**
 * How long a create-or-update keeps trying "reserve the name, else update its holder" before it
 * gives up with 503. A time budget, not a count of rounds: N concurrent upserts of one group are N
 * writes to one stream, and each round only one of them lands, so the last needs about N rounds
 * (100 callers exhausted a fixed 6 rounds of 5 attempts and got 503). Backoff is jittered and capped.
 */
const SAVE_BUDGET_MS = 30_000;
const BASE_DELAY_MS = 25;
const MAX_DELAY_MS = 250;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hasStatus = (error: unknown, status: number): boolean => error instanceof AppError && error.status === status;
const later = (a: Position | null, b: Position | null): Position | null => (a === null ? b : b === null || a >= b ? a : b);

/** Load -> decide -> append for `group-<laui>`; each method returns the position to wait for. */
export const groupHandler = ({ eventStore, readStore }: GroupHandlerDeps) => {
  const actorOf = async (caller: Caller): Promise<GroupActor> => ({
    ...caller,
    principals: [caller.laui, ...(await groupsOfPrincipal(readStore, caller.laui))],
  });

  /** The last position of a stream: what a reader must wait for when a command wrote nothing. */
  const headOf = async (stream: string): Promise<Position | null> => (await eventStore.readStream(stream)).at(-1)?.position ?? null;

  const run = async (stream: string, command: GroupCommand, metadata: EventMetadata) => {
    const result = await handleCommand({ eventStore, streamId: stream, decider: groupDecider, command, metadata });
    return { ...result, position: result.position ?? (await headOf(stream)) };
  };

  /** The reservation of `name`: our own stream when we won it, else the current holder (or null if free). */
  const reserve = async (key: string, ownStream: string, metadata: EventMetadata): Promise<string | null> => {
    try {
      await reserveUniqueKey(eventStore, { key, ownerStream: ownStream, conflictDetail: 'Group already exists', metadata });
      return ownStream;
    } catch (error) {
      if (!hasStatus(error, 409)) throw error;
      return (await loadState(eventStore, uniqueKeyStream(key), uniqueKeyDecider)).owner;
    }
  };

  return {
    /**
     * POST /group/create: create the group, or update the group holding that name (spec 4.6).
     * The name reservation decides who creates; everyone else updates the holder, waiting
     * briefly when the holder is between its reservation and its creation, or its deletion and
     * its release. Of any number of concurrent saves of one new name, exactly one creates.
     */
    async save(input: SaveGroup, caller: Caller, metadata: EventMetadata): Promise<Position | null> {
      const key = groupNameKey(input.name);
      const laui = newLaui(new Date(metadata.at));
      const create: GroupCommand = {
        kind: 'create',
        laui,
        name: input.name,
        description: input.description ?? '',
        creator: caller.laui,
        patch: input.access_patch,
      };
      // Refuse a bad patch before the name is reserved, so a refusal never blocks the name.
      groupDecider.decide(create, groupDecider.initialState());
      const deadline = Date.now() + SAVE_BUDGET_MS;
      for (let attempt = 1; ; attempt += 1) {
        try {
          const holder = await reserve(key, groupStream(laui), metadata);
          if (holder === groupStream(laui)) return (await run(holder, create, metadata)).position;
          if (holder === null) continue; // released between our reservation and our look: try again at once
          const state = await loadState(eventStore, holder, groupDecider);
          if (state.status === 'active') {
            const update: GroupCommand = { kind: 'update', description: input.description, patch: input.access_patch, actor: await actorOf(caller) };
            try {
              return (await run(holder, update, metadata)).position;
            } catch (error) {
              // Deleted since we looked: the name is about to be free.
              if (!hasStatus(error, 404)) throw error;
            }
          } else if (state.status === 'deleted') {
            // A deletion that stopped before releasing the name (a crash): finish it for them.
            await releaseUniqueKey(eventStore, { key, ownerStream: holder, metadata });
            continue;
          }
        } catch (error) {
          // Other savers of this name won the stream this round (write_conflict): the next round
          // decides again on what they wrote.
          if (!hasStatus(error, 503) || Date.now() >= deadline) throw error;
        }
        if (Date.now() >= deadline) throw writeConflict();
        await sleep(Math.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1)));
      }
    },

    /** DELETE /group/delete: owners (and admins) only; the name is released for reuse. */
    async delete(groupLaui: Laui, caller: Caller, metadata: EventMetadata): Promise<Position | null> {
      const stream = groupStream(groupLaui);
      const result = await run(stream, { kind: 'delete', actor: await actorOf(caller) }, metadata);
      if (result.state.status !== 'deleted') return result.position;
      const released = await releaseUniqueKey(eventStore, { key: groupNameKey(result.state.name), ownerStream: stream, metadata });
      return later(result.position, released);
    },
  };
};

export type GroupHandler = ReturnType<typeof groupHandler>;
