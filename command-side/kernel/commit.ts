import { WrongExpectedVersionError, type AppendResult, type EventStore, type Position, type StreamAppend } from '../../shared/event-store/EventStore.ts';
import type { CompanionAppend } from './CompanionAppend.ts';
import { retryOnConflict, SPEC_RETRY } from './retryOnConflict.ts';

export interface Committed {
  /** The main stream's append, null when there was none. */
  main: AppendResult | null;
  /** Position of the commit's last event (companions included), null when nothing was written. */
  position: Position | null;
}

/**
 * Appends a decision on the main stream together with its companions (appends on other streams),
 * each at the expected revision it was decided on. The one place that knows whether the store has
 * multi-stream transactions: domain code hands its appends here and never asks.
 *
 * - With appendAtomically (SQLite, memory): one transaction, in the order companions `first`, the
 *   main stream, the others. Everything is written or nothing is: a conflict anywhere throws
 *   WrongExpectedVersionError and the caller's attempt is decided again (retryOnConflict). A single
 *   append is such a transaction on any store.
 * - Without (EventStoreDB): single-stream appends in that same order, the companions `first` one
 *   after the other, then the main stream, then the others concurrently (distinct streams). What
 *   holds without atomicity: each append is still checked by its own expected revision, and
 *   everything written is a prefix of that order, so an append after the main stream's is never
 *   written without it, and the main stream's never without the `first` ones (a crash in between
 *   leaves the earlier appends alone: a terminal state whose slot the reaper frees, a reservation
 *   that a later owner takes over as an orphan). A conflict or an error on a `first` companion or on
 *   the main stream throws as above; what was written before it stays written (and is told so:
 *   `committed`), so the next attempt must find it done. An append after the main stream's is on
 *   its own once the main stream's is written: a conflict on it is planned again on a fresh read
 *   (`again`, under the spec's retry policy), and an error goes to its `failed`.
 *
 * Each written companion is told its result (`committed`).
 */
export const commit = async (eventStore: EventStore, main: StreamAppend | null, companions: ReadonlyArray<CompanionAppend>): Promise<Committed> => {
  const before = companions.filter((companion) => companion.first);
  const after = companions.filter((companion) => !companion.first);
  const appends = [...before.map((companion) => companion.append), ...(main ? [main] : []), ...after.map((companion) => companion.append)];
  if (appends.length === 0) return { main: null, position: null };
  if (appends.length > 1 && !eventStore.appendAtomically) return commitInOrder(eventStore, main, before, after);
  // One append is its own transaction on any store: `append`, as a command on one stream always had.
  const only = appends.length === 1 ? (appends[0] as StreamAppend) : null;
  const results = only ? [await eventStore.append(only.streamId, only.events, only.expected)] : await (eventStore.appendAtomically as NonNullable<EventStore['appendAtomically']>)(appends);
  const resultOf = (index: number): AppendResult => {
    const result = results[index];
    if (!result) throw new Error(`commit: the store returned no result for append ${index} of ${appends.length}`);
    return result;
  };
  const mainResult = main ? resultOf(before.length) : null;
  [...before, ...after].forEach((companion, index) => companion.committed(resultOf(index < before.length ? index : index + (main ? 1 : 0))));
  return { main: mainResult, position: latest(results) };
};

const latest = (results: ReadonlyArray<AppendResult | null>): Position | null =>
  results.reduce<Position | null>((last, result) => (result === null || (last !== null && last >= result.position) ? last : result.position), null);

const appendOne = (eventStore: EventStore, append: StreamAppend): Promise<AppendResult> => eventStore.append(append.streamId, append.events, append.expected);

/** Without multi-stream transactions: the order commit() documents, and what it guarantees. */
const commitInOrder = async (
  eventStore: EventStore,
  main: StreamAppend | null,
  before: ReadonlyArray<CompanionAppend>,
  after: ReadonlyArray<CompanionAppend>,
): Promise<Committed> => {
  const written: AppendResult[] = [];
  for (const companion of before) {
    const result = await appendOne(eventStore, companion.append);
    written.push(result);
    companion.committed(result);
  }
  const mainResult = main ? await appendOne(eventStore, main) : null;
  if (mainResult) written.push(mainResult);
  const followers = await Promise.allSettled(after.map((companion) => appendAfterMain(eventStore, companion)));
  const failure = followers.find((settled) => settled.status === 'rejected');
  if (failure) throw failure.reason;
  return { main: mainResult, position: latest([...written, ...followers.map((settled) => (settled.status === 'fulfilled' ? settled.value : null))]) };
};

/** A companion appended once the main stream's events are written: its conflicts are its own. */
const appendAfterMain = async (eventStore: EventStore, companion: CompanionAppend): Promise<AppendResult | null> => {
  let current: CompanionAppend | null = companion;
  try {
    return await retryOnConflict<AppendResult | null>(SPEC_RETRY, async (fresh) => {
      if (fresh) current = current?.again ? await current.again() : null;
      if (current === null) return { done: null };
      try {
        const result = await appendOne(eventStore, current.append);
        current.committed(result);
        return { done: result };
      } catch (error) {
        if (!(error instanceof WrongExpectedVersionError) || !current.again) throw error;
        return { conflict: current.guessed ? 'guessed' : 'contended' };
      }
    });
  } catch (error) {
    if (!companion.failed) throw error;
    companion.failed(error);
    return null;
  }
};
