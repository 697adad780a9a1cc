import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';

/** Past this many events behind, the count of a store whose positions are not event numbers stops (the gauge says "at least"). */
export const LAG_COUNT_LIMIT = 10_000;

export interface ProjectionLagSource {
  eventStore: Pick<EventStore, 'headPosition' | 'readAll'>;
  /** The position the read models have applied: the runner's, or the projector's checkpoint. */
  applied(): Promise<Position>;
  /**
   * True where a position is the event's number in the log (SQLite's rowids, the memory store), so
   * the lag is a subtraction; false for KurrentDB, whose commit positions are byte offsets: the
   * events past the checkpoint are counted (at most LAG_COUNT_LIMIT), and only when there are any.
   */
  positionsCountEvents: boolean;
}

/** Events in the log after the read models' position: the log's head minus the checkpoint. */
export const projectionLag = (source: ProjectionLagSource) => async (): Promise<number> => {
  const [head, applied] = await Promise.all([source.eventStore.headPosition(), source.applied()]);
  if (head <= applied) return 0;
  if (source.positionsCountEvents) return Number(head - applied);
  return (await source.eventStore.readAll({ after: applied, maxCount: LAG_COUNT_LIMIT })).length;
};
