import { assertNever } from '../../shared/assertNever.ts';
import { hash } from 'node:crypto';
import { conflict } from '../../shared/errors.ts';
import type { EventMetadata, EventToAppend } from '../../shared/events.ts';
import { WrongExpectedVersionError, type AppendResult, type EventStore, type Position } from '../../shared/event-store/EventStore.ts';
import type { Decider } from './Decider.ts';
import { handleCommand, loadRevision } from './handleCommand.ts';
import { commit } from './commit.ts';
import type { CompanionAppend } from './CompanionAppend.ts';
import type { UniqueKeyEvent } from '../../shared/domain-events/uniqueKeyEvents.ts';

interface UniqueKeyState {
  owner: string | null;
  reservedAt: string | null;
}

type UniqueKeyCommand =
  | { kind: 'reserve'; key: string; owner: string; at: string; orphanOwner: string | null; conflictDetail: string }
  | { kind: 'release'; key: string; owner: string; at: string };

export const uniqueKeyDecider: Decider<UniqueKeyState, UniqueKeyCommand, UniqueKeyEvent> = {
  initialState: () => ({ owner: null, reservedAt: null }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'UniqueKeyReserved':
        return { owner: event.data.owner, reservedAt: event.data.at };
      case 'UniqueKeyReleased':
        return { owner: null, reservedAt: null };
      default:
        return assertNever(event);
    }
  },
  decide: (command, state) => {
    switch (command.kind) {
      case 'reserve':
        if (state.owner === command.owner) return [];
        // Only the very orphan that was inspected may be taken over, never a reservation made since.
        if (state.owner !== null && state.owner !== command.orphanOwner) throw conflict(command.conflictDetail);
        return [{ type: 'UniqueKeyReserved', data: { key: command.key, owner: command.owner, at: command.at } }];
      case 'release':
        if (state.owner !== command.owner) return [];
        return [{ type: 'UniqueKeyReleased', data: { key: command.key, owner: command.owner, at: command.at } }];
      default:
        return assertNever(command);
    }
  },
};

// crypto.hash: the one-shot form of createHash().update().digest(), the same digest without a Hash object per key.
export const uniqueKeyStream = (key: string): string => `unique-${hash('sha256', key, 'hex')}`;

/** A reservation whose owner stream never appeared (the creator crashed between the two appends). */
const ORPHAN_AFTER_MS = 60_000;

interface Reservation {
  key: string;
  ownerStream: string;
  conflictDetail: string;
  metadata: EventMetadata;
}

/**
 * Reserves the key for a new owner stream and appends that stream's first events, the reservation
 * first (commit): a store with multi-stream transactions does both in one commit, one fsync instead
 * of two in sequence (a catalog create waited for both), and a crash can no longer leave an orphan
 * reservation; a store without them goes as DESIGN.md says, reservation first, then the owner's
 * events. A key with history (taken, released, orphaned) fails the reservation's expectation of no
 * stream and goes the long way before the owner's events are appended.
 */
export const reserveUniqueKeyAndCreate = async (
  eventStore: EventStore,
  args: Reservation,
  ownerEvents: ReadonlyArray<EventToAppend>,
): Promise<AppendResult> => {
  const owner = { streamId: args.ownerStream, events: ownerEvents, expected: 'no_stream' as const };
  const reservation: CompanionAppend = {
    append: { streamId: uniqueKeyStream(args.key), events: reservationEvents(args), expected: 'no_stream' },
    guessed: false,
    first: true,
    committed: () => undefined,
  };
  try {
    const { main } = await commit(eventStore, owner, [reservation]);
    if (!main) throw new Error('commit returned no result for the owner stream');
    return main;
  } catch (error) {
    if (!(error instanceof WrongExpectedVersionError)) throw error;
  }
  // The owner stream is new, so the key's stream is the one that exists: it has history, and
  // appending its reservation expecting no stream again would only fail again.
  await reserveKeyWithHistory(eventStore, args);
  return eventStore.append(args.ownerStream, ownerEvents, 'no_stream');
};

const reserveCommand = (args: Reservation, orphanOwner: string | null) =>
  ({ kind: 'reserve', key: args.key, owner: args.ownerStream, at: args.metadata.at, conflictDetail: args.conflictDetail, orphanOwner }) as const;

/** The reservation of a key never used, decided on the initial state (no read). */
const reservationEvents = (args: Reservation): EventToAppend[] =>
  uniqueKeyDecider.decide(reserveCommand(args, null), uniqueKeyDecider.initialState()).map((event) => ({ ...event, metadata: args.metadata }));

export const reserveUniqueKey = async (eventStore: EventStore, args: Reservation): Promise<Position | null> => {
  // Most keys were never used: their reservation is appended expecting no stream, without reading
  // it first (that read was ~5% of a catalog create). A key with any history (taken, released, an
  // orphan) fails the expectation and goes the long way; no decision is made on a guess.
  try {
    const appended = await eventStore.append(uniqueKeyStream(args.key), reservationEvents(args), 'no_stream');
    return appended.position;
  } catch (error) {
    if (!(error instanceof WrongExpectedVersionError)) throw error;
  }
  return reserveKeyWithHistory(eventStore, args);
};

/** The long way, for a key whose stream exists: read it, then decide on what it holds. */
const reserveKeyWithHistory = async (eventStore: EventStore, args: Reservation): Promise<Position | null> => {
  const stream = uniqueKeyStream(args.key);
  const loaded = await loadRevision(eventStore, stream, uniqueKeyDecider);
  const current = loaded.state;
  let orphanOwner: string | null = null;
  if (current.owner !== null && current.owner !== args.ownerStream) {
    const ownerExists = (await eventStore.readStream(current.owner, { toRevision: 0 })).length > 0;
    const age = Date.parse(args.metadata.at) - Date.parse(current.reservedAt ?? args.metadata.at);
    if (!ownerExists && age > ORPHAN_AFTER_MS) orphanOwner = current.owner;
  }
  const result = await handleCommand({ eventStore, streamId: stream, decider: uniqueKeyDecider, command: reserveCommand(args, orphanOwner), metadata: args.metadata, known: loaded });
  return result.position;
};

export const releaseUniqueKey = async (
  eventStore: EventStore,
  args: { key: string; ownerStream: string; metadata: EventMetadata },
): Promise<Position | null> => {
  const result = await handleCommand({
    eventStore,
    streamId: uniqueKeyStream(args.key),
    decider: uniqueKeyDecider,
    command: { kind: 'release', key: args.key, owner: args.ownerStream, at: args.metadata.at },
    metadata: args.metadata,
  });
  return result.position;
};
