import { writeConflict } from '../../shared/errors.ts';

export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
}

/** The spec's rule for contended streams: 5 attempts, exponential backoff from 100 ms. */
export const SPEC_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 100 };

/**
 * How one attempt ended: `done` with its result, or a conflict on an expected revision. `guessed`:
 * the revision came from a cached state (or a caller's guess), so the conflict means the cache was
 * stale, not that another writer is contending for the stream.
 */
export type Attempt<T> = { done: T } | { conflict: 'guessed' | 'contended' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The one conflict loop of the command side. An attempt decides on what it knows and appends with
 * the revisions it decided on; after a conflict the next attempt reads afresh (`fresh`) and decides
 * again (the decision may change, e.g. a code redeemed twice). A conflict on a guessed revision
 * costs one immediate fresh attempt, outside the policy: it is not contention. Real contention
 * follows the policy's exponential backoff and becomes 503 write_conflict once its attempts are spent.
 */
export const retryOnConflict = async <T>(retry: RetryPolicy, attempt: (fresh: boolean) => Promise<Attempt<T>>): Promise<T> => {
  // After any conflict the streams are read: their cached state, or the caller's, is behind.
  let fresh = false;
  for (let tries = 1; ; tries += 1) {
    const outcome = await attempt(fresh);
    if ('done' in outcome) return outcome.done;
    fresh = true;
    if (outcome.conflict === 'guessed') {
      tries -= 1;
      continue;
    }
    if (tries >= retry.attempts) throw writeConflict();
    await sleep(retry.baseDelayMs * 2 ** (tries - 1) * Math.random());
  }
};
