import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { EndedSessionDoc } from '../../shared/read-models/EndedSessionDoc.ts';

/**
 * Whether a verified token's login session is still open: one keyed lookup in the ended-sessions
 * read model. A token without a `sid` passes only where `sidRequired` is false: access tokens of
 * workers belong to a task run, not a login, and access tokens from before sessions had ids expire
 * within 24 h of the upgrade. Session cookies always carry one (only login makes them).
 */
export const sessionStillOpen = async (
  endedSessions: Collection<EndedSessionDoc>,
  claims: Readonly<Record<string, unknown>>,
  sidRequired: boolean,
): Promise<boolean> => {
  const sid = claims.sid;
  if (sid === undefined) return !sidRequired;
  if (typeof sid !== 'string') return false;
  return (await endedSessions.peek(sid)) === null;
};
