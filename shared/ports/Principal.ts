import type { Laui } from '../ids.ts';

/** The authenticated caller, put on `ctx.state.principal` by the auth middleware. */
export interface Principal {
  laui: Laui;
  username: string;
  isAdmin: boolean;
  /** Granted the auditor role: may read the whole event log (GET /api/v1/events). */
  isAuditor: boolean;
  mustChangePassword: boolean;
}
