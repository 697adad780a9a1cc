import type { DomainEvent } from '../events.ts';
import type { Laui } from '../ids.ts';

/**
 * A login session, stream `session-<sid>`. The sid is put in the session cookie, in the codes
 * issued in the session and in the access and refresh tokens those codes are exchanged for; logout
 * ends the session and with it every one of them. Only the end is recorded: a login appends
 * nothing, so sessions cost the log nothing until they are ended.
 */
export type SessionEvent = DomainEvent<'SessionEnded', { session_id: string; user_laui: Laui | null; reason: string }>;

/**
 * Refresh tokens rotate: each one is single-use and its redemption issues a successor in the same
 * family. Presenting an already-rotated token means it was copied: the whole family is revoked
 * (stream `refreshfamily-<id>`), which logs out the thief and the victim alike.
 */
export type RefreshTokenEvent =
  /** session_id: the login session the family descends from (absent on tokens issued before sessions had ids). */
  | DomainEvent<'RefreshTokenIssued', { user_laui: Laui; family_id: string; expires_at: string; session_id?: string }>
  | DomainEvent<'RefreshTokenRotated', { at: string }>
  | DomainEvent<'RefreshTokenReuseDetected', { at: string; family_id: string }>
  | DomainEvent<'RefreshTokenRevoked', { at: string }>;

/** The family stream only ever records its revocation. */
export type RefreshFamilyEvent = DomainEvent<'RefreshFamilyRevoked', { reason: string }>;

/**
 * An authorization code is a stream `authcode-<sha256(code)>` (the code itself is never stored).
 * Redeeming appends at the issued revision, so of two concurrent redemptions exactly one wins.
 */
export type AuthorizationCodeEvent =
  /** session_id: the login session the code was issued in (absent on codes issued before sessions had ids). */
  | DomainEvent<'AuthorizationCodeIssued', { user_laui: Laui; client_id: string; expires_at: string; session_id?: string }>
  | DomainEvent<'AuthorizationCodeRedeemed', { at: string }>;
