import type { StreamAppend } from '../../shared/event-store/EventStore.ts';

/**
 * appendAtomically judges every expectation against the streams as they were before the call, so
 * one stream twice would be judged against a revision its own first part changes: refused, as the
 * caller's mistake, before anything is written.
 */
export function assertDistinctStreams(appends: ReadonlyArray<StreamAppend>): void {
  const seen = new Set<string>();
  for (const { streamId } of appends) {
    if (seen.has(streamId)) throw new Error(`appendAtomically: stream ${streamId} appears twice`);
    seen.add(streamId);
  }
  if (appends.length === 0) throw new Error('appendAtomically: no appends');
}
