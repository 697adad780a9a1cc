import { START, UnreadablePositionError, type EventStore, type Position, type RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { EventFilter, EventsQuery } from './eventsQuery.ts';
import { redactStreamId } from './redactEvent.ts';

/** True when an event passes the filter; the stream is compared as served (redactStreamId). */
export const eventMatches =
  (filter: EventFilter) =>
  (event: RecordedEvent): boolean =>
    (filter.type === undefined || event.type.startsWith(filter.type)) && (filter.stream === undefined || redactStreamId(event.streamId) === filter.stream);

export interface EventsPage {
  events: RecordedEvent[];
  /** The `from` of the next page: the last position examined, `from` itself when nothing was. */
  nextFrom: Position;
}

/**
 * A filtered page examines at most this many events of the log: a rare type would otherwise make
 * one request scan the whole log. The page may then hold fewer than `limit` events (or none) with a
 * `next_from` beyond `from`; a reader is caught up when a page is empty and next_from === from.
 */
export const SCAN_BUDGET = 20_000;

const READ_PAGE = 1000;

/** Reads a stream from its first event after `from`: positions grow with revisions, so search. */
const firstRevisionAfter = async (store: EventStore, stream: string, from: Position): Promise<number | null> => {
  const positionAt = async (revision: number): Promise<Position | null> =>
    (await store.readStream(stream, { fromRevision: revision, toRevision: revision }))[0]?.position ?? null;
  // Galloping: find a revision past `from` (or past the end), then bisect.
  let low = 0;
  let high = 1;
  for (;;) {
    const position = await positionAt(high - 1);
    if (position === null || position > from) break;
    low = high;
    high *= 2;
  }
  // Invariant: every revision below `low` is at or before `from`; revision high-1 is past it or absent.
  let end = high - 1;
  while (low < end) {
    const middle = Math.floor((low + end) / 2);
    const position = await positionAt(middle);
    if (position !== null && position > from) end = middle;
    else if (position === null) end = middle;
    else low = middle + 1;
  }
  const position = await positionAt(low);
  return position !== null && position > from ? low : null;
};

const readOneStream = async (store: EventStore, query: EventsQuery & { stream: string }): Promise<EventsPage> => {
  const events: RecordedEvent[] = [];
  let nextFrom = query.from;
  let revision = await firstRevisionAfter(store, query.stream, query.from);
  const matches = eventMatches(query);
  let scanned = 0;
  while (revision !== null && events.length < query.limit && scanned < SCAN_BUDGET) {
    const chunk = await store.readStream(query.stream, { fromRevision: revision, toRevision: revision + READ_PAGE - 1 });
    for (const event of chunk) {
      scanned += 1;
      nextFrom = event.position;
      if (matches(event)) events.push(event);
      if (events.length === query.limit) break;
    }
    revision = chunk.length === READ_PAGE ? revision + READ_PAGE : null;
  }
  return { events, nextFrom };
};

/** Streams named after a credential hash are served under another id: found by scanning only. */
const servedUnderItsOwnId = (stream: string): boolean => redactStreamId(stream) === stream && !/^(authcode|refresh)-/.test(stream);

/**
 * A `from` past the log's last position is refused alike on every store (a made-up or foreign
 * position; on KurrentDB the read itself fails for one between two events). Asked only when a page
 * comes back empty where it started, so a reader's ordinary pages cost no extra read.
 */
export const assertReadableFrom = async (store: EventStore, from: Position): Promise<void> => {
  if (from <= START) return;
  const head = await store.headPosition();
  if (from > head) throw new UnreadablePositionError(from, `past the end of the log (its last position is ${String(head)})`);
};

/** One page of GET /events: the global log after `from`, filtered, at most `limit` events. */
export const readEventsPage = async (store: EventStore, query: EventsQuery): Promise<EventsPage> => {
  const page = await readFilteredPage(store, query);
  if (page.events.length === 0 && page.nextFrom === query.from) await assertReadableFrom(store, query.from);
  return page;
};

const readFilteredPage = async (store: EventStore, query: EventsQuery): Promise<EventsPage> => {
  if (query.stream !== undefined && servedUnderItsOwnId(query.stream)) return readOneStream(store, { ...query, stream: query.stream });
  const filtered = query.type !== undefined || query.stream !== undefined;
  if (!filtered) {
    const events = await store.readAll({ after: query.from, maxCount: query.limit });
    return { events, nextFrom: events.at(-1)?.position ?? query.from };
  }
  const matches = eventMatches(query);
  const events: RecordedEvent[] = [];
  let nextFrom = query.from;
  let scanned = 0;
  while (events.length < query.limit && scanned < SCAN_BUDGET) {
    const page = await store.readAll({ after: nextFrom, maxCount: Math.min(READ_PAGE, SCAN_BUDGET - scanned) });
    for (const event of page) {
      scanned += 1;
      nextFrom = event.position;
      if (matches(event)) events.push(event);
      if (events.length === query.limit) break;
    }
    if (page.length === 0) break;
  }
  return { events, nextFrom };
};
