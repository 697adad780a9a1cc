import { badRequest } from '../../shared/errors.ts';
import type { EventMetadata } from '../../shared/events.ts';
import type { EventStore, Position } from '../../shared/event-store/EventStore.ts';
import { newLaui, type Laui } from '../../shared/ids.ts';
import type { PasswordHasher } from '../../shared/ports/PasswordHasher.ts';
import type { SecretBox } from '../../shared/ports/SecretBox.ts';
import { handleCommand, loadState } from '../kernel/handleCommand.ts';
import { reserveUniqueKey } from '../kernel/uniqueKey.ts';
import { userDecider } from './decide.ts';
import { userStream, usernameKey } from './user.ts';

export interface UserHandlerDeps {
  eventStore: EventStore;
  passwords: PasswordHasher;
  secrets: SecretBox;
}

export interface NewUser {
  username: string;
  email: string;
  password: string;
  mustChangePassword: boolean;
  isAdmin: boolean;
  /** May read the whole event log (GET /api/v1/events); absent means no. */
  isAuditor?: boolean;
}

const USERNAME = /^[A-Za-z0-9_.@-]{1,64}$/;
export const MIN_PASSWORD_LENGTH = 8;

/** Load -> decide -> append for `user-<laui>`; each method returns the commit position. */
export const userHandler = ({ eventStore, passwords, secrets }: UserHandlerDeps) => ({
  async create(user: NewUser, metadata: EventMetadata): Promise<{ laui: Laui; position: Position }> {
    if (!USERNAME.test(user.username)) {
      throw badRequest('Invalid argument: username must be 1-64 letters, digits or _ . @ -');
    }
    if (user.password.length < MIN_PASSWORD_LENGTH) {
      throw badRequest(`Invalid argument: password must have at least ${MIN_PASSWORD_LENGTH} characters`);
    }
    const laui = newLaui(new Date(metadata.at));
    // Reserve the name first: of two concurrent creations of one name, exactly one proceeds.
    await reserveUniqueKey(eventStore, {
      key: usernameKey(user.username),
      ownerStream: userStream(laui),
      conflictDetail: 'User already exists',
      metadata,
    });
    const result = await handleCommand({
      eventStore,
      streamId: userStream(laui),
      decider: userDecider,
      command: {
        kind: 'create',
        laui,
        username: user.username,
        email: user.email,
        passwordHash: await passwords.hash(user.password),
        mustChangePassword: user.mustChangePassword,
        isAdmin: user.isAdmin,
        isAuditor: user.isAuditor === true,
      },
      metadata,
    });
    return { laui, position: result.position as Position };
  },

  async changePassword(laui: Laui, currentPassword: string, newPassword: string, metadata: EventMetadata): Promise<Position> {
    const state = await loadState(eventStore, userStream(laui), userDecider);
    const currentPasswordMatches = state.exists && (await passwords.verify(currentPassword, state.passwordHash));
    if (currentPasswordMatches && newPassword.length < MIN_PASSWORD_LENGTH) {
      throw badRequest(`Invalid argument: new_password must have at least ${MIN_PASSWORD_LENGTH} characters`);
    }
    const result = await handleCommand({
      eventStore,
      streamId: userStream(laui),
      decider: userDecider,
      command: { kind: 'change-password', currentPasswordMatches, newPasswordHash: await passwords.hash(newPassword) },
      metadata,
    });
    return result.position as Position;
  },

  async updateMarketplaceToken(laui: Laui, token: string, metadata: EventMetadata): Promise<Position> {
    const result = await handleCommand({
      eventStore,
      streamId: userStream(laui),
      decider: userDecider,
      command: { kind: 'update-marketplace-token', token: secrets.seal(token) },
      metadata,
    });
    return result.position as Position;
  },

  /** Grants or withdraws the auditor role: the commit's position, or null when nothing changed. */
  async setAuditor(laui: Laui, isAuditor: boolean, metadata: EventMetadata): Promise<Position | null> {
    const result = await handleCommand({ eventStore, streamId: userStream(laui), decider: userDecider, command: { kind: 'set-auditor', isAuditor }, metadata });
    return result.position;
  },
});

export type UserHandler = ReturnType<typeof userHandler>;
