import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { Sealed } from '../../shared/ports/SecretBox.ts';
import type { Projection } from '../runner/Projection.ts';
import type { UserDoc } from '../../shared/read-models/UserDoc.ts';

export const USERS = 'users';

const str = (data: Record<string, unknown>, key: string): string => String(data[key] ?? '');

export const usersProjection: Projection<UserDoc> = {
  name: 'users',
  collection: USERS,
  indexes: [{ fields: ['username_key'], unique: true }],
  handles: new Set(['UserCreated', 'UserPasswordChanged', 'MarketplaceTokenUpdated', 'UserAuditorRoleChanged']),
  documentId: (event: RecordedEvent) => (event.streamId.startsWith('user-') ? event.streamId.slice('user-'.length) : null),
  evolve: (doc, event) => {
    const data = event.data as Record<string, unknown>;
    const at = event.metadata.at;
    switch (event.type) {
      case 'UserCreated':
        return {
          id: str(data, 'laui'),
          laui: str(data, 'laui'),
          username: str(data, 'username'),
          username_key: str(data, 'username').toLowerCase(),
          email: str(data, 'email'),
          password_hash: str(data, 'password_hash'),
          must_change_password: data.must_change_password === true,
          is_admin: data.is_admin === true,
          is_auditor: data.is_auditor === true,
          marketplace_token: null,
          chat_agent_laui: null,
          chat_agent_name: null,
          chat_connection_laui: null,
          created_at: at,
          updated_at: at,
        };
      case 'UserPasswordChanged':
        return doc && { ...doc, password_hash: str(data, 'password_hash'), must_change_password: false, updated_at: at };
      case 'MarketplaceTokenUpdated':
        return doc && { ...doc, marketplace_token: data.token as Sealed, updated_at: at };
      case 'UserAuditorRoleChanged':
        return doc && { ...doc, is_auditor: data.is_auditor === true, updated_at: at };
      default:
        return doc;
    }
  },
};
