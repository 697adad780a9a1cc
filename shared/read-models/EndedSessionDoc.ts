/**
 * Ended login sessions by sid: what the auth middleware consults on every request that carries a
 * sid, one keyed lookup. Rebuilt from the log like every read model, so a logout holds across restarts.
 */
export interface EndedSessionDoc {
  [field: string]: unknown;
  id: string;
  user_laui: string | null;
  ended_at: string;
}
