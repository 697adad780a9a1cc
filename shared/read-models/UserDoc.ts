import type { Laui } from '../ids.ts';
import type { Sealed } from '../ports/SecretBox.ts';

/** The users read model: what login, the auth middleware and GET /user/me read. */
export interface UserDoc {
  [field: string]: unknown;
  id: Laui;
  laui: Laui;
  username: string;
  /** Lower-cased for the unique, case-insensitive login lookup. */
  username_key: string;
  email: string;
  password_hash: string;
  must_change_password: boolean;
  is_admin: boolean;
  /** May read the event log (GET /api/v1/events). Absent on documents of an older read store: false. */
  is_auditor?: boolean;
  marketplace_token: Sealed | null;
  chat_agent_laui: Laui | null;
  chat_agent_name: string | null;
  chat_connection_laui: Laui | null;
  created_at: string;
  updated_at: string;
}
