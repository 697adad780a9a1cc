import type { StreamAppend } from '../../shared/event-store/EventStore.ts';

/**
 * appendAtomically's precondition, refused as the caller's mistake before anything is written: at
 * least one append, and no stream twice (every expectation is judged against the streams as they
 * were before the call, so a stream's second part would be judged against a revision its first
 * part changes).
 */
export function assertDistinctStreams(appends: ReadonlyArray<StreamAppend>): void {
  const seen = new Set<string>();
  for (const { streamId } of appends) {
    if (seen.has(streamId)) throw new Error(`appendAtomically: stream ${streamId} appears twice`);
    seen.add(streamId);
  }
  if (appends.length === 0) throw new Error('appendAtomically: no appends');
}
