import { expect } from 'chai';
import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { toEnvelope } from './eventEnvelope.ts';
import { redactStreamId } from './redactEvent.ts';

const hash = 'a'.repeat(64);
const sealed = { v: 1, iv: 'iv-b64', tag: 'tag-b64', ct: 'CIPHERTEXT-b64' };

const recorded = (streamId: string, type: string, data: Record<string, unknown>, metadata: Record<string, unknown> = {}): RecordedEvent => ({
  id: 'e1',
  streamId,
  revision: 0,
  position: 7n,
  type,
  data,
  metadata: { user_laui: null, correlation_id: 'c', causation_id: null, at: '2026-01-01T00:00:00.000Z', ...metadata },
  recordedAt: '2026-01-01T00:00:00.000Z',
});

const served = (event: RecordedEvent) => toEnvelope(event);

describe('redaction of served events (toEnvelope)', () => {
  it('given UserCreated and UserPasswordChanged, then the hash is masked and the flags stay readable', () => {
    const created = served(
      recorded('user-u1', 'UserCreated', { laui: 'u1', username: 'ada', email: 'a@x', password_hash: 'scrypt$N$salt$hash', must_change_password: true, is_admin: false }),
    );
    expect(created.data).to.deep.equal({ laui: 'u1', username: 'ada', email: 'a@x', password_hash: '********', must_change_password: true, is_admin: false });
    expect(served(recorded('user-u1', 'UserPasswordChanged', { password_hash: 'scrypt$2' })).data).to.deep.equal({ password_hash: '********' });
  });

  it('given a sealed marketplace token, then neither its plaintext nor its ciphertext is served', () => {
    const text = JSON.stringify(served(recorded('user-u1', 'MarketplaceTokenUpdated', { token: sealed })));
    expect(text).to.not.include('CIPHERTEXT');
    expect(text).to.include('"token":"********"');
  });

  it('given a connection ItemCreated and ItemUpdated, then the sealed content keeps its masked view and loses its ciphertext', () => {
    const content = { $sealed: sealed, keys: ['host', 'password'], shown: { host: 'db', password: '********' } };
    const created = served(recorded('item-i1', 'ItemCreated', { laui: 'i1', item_type: 'connection', fields: { content, max_parallelism: 2 } }));
    expect((created.data as { fields: unknown }).fields).to.deep.equal({
      content: { $sealed: '********', keys: ['host', 'password'], shown: { host: 'db', password: '********' } },
      max_parallelism: 2,
    });
    const updated = served(recorded('item-i1', 'ItemUpdated', { changes: { content }, version: 2, revision_laui: 'r2' }));
    expect(JSON.stringify(updated)).to.not.include('CIPHERTEXT');
  });

  it('given unsealed credentials anywhere (a task config, a URL), then they are masked by key and inside strings', () => {
    const event = served(
      recorded('item-t1', 'ItemUpdated', {
        changes: { config: { api_key: 'sk-123', nested: [{ client_secret: 's', pin: 1 }], dsn: 'postgres://etl:hunter2@db/dw', token_limit: 100 } },
        version: 3,
        revision_laui: null,
      }),
    );
    const text = JSON.stringify(event);
    for (const secret of ['sk-123', '"s"', 'hunter2']) expect(text).to.not.include(secret);
    expect(text).to.include('"token_limit":100');
    expect(text).to.include('postgres://etl:********@db/dw');
  });

  it('given code and refresh token events, then their hash-named streams are served under another stable id', () => {
    const issued = served(recorded(`authcode-${hash}`, 'AuthorizationCodeIssued', { user_laui: 'u1', client_id: 'cli', expires_at: 'x', session_id: 's1' }));
    const redeemed = served(recorded(`authcode-${hash}`, 'AuthorizationCodeRedeemed', { at: 'x' }));
    expect(issued.stream).to.match(/^authcode-[0-9a-f]{32}$/);
    expect(issued.stream).to.equal(redeemed.stream);
    expect(JSON.stringify(issued)).to.not.include(hash);
    const refresh = served(recorded(`refresh-${hash}`, 'RefreshTokenIssued', { user_laui: 'u1', family_id: 'f1', expires_at: 'x', session_id: 's1' }));
    expect(refresh.stream).to.match(/^refresh-[0-9a-f]{32}$/);
    expect(JSON.stringify(refresh)).to.not.include(hash);
    expect(redactStreamId('item-65a000000000000000000001')).to.equal('item-65a000000000000000000001');
    const ended = served(recorded('session-s1', 'SessionEnded', { session_id: 's1', user_laui: 'u1', reason: 'logout' }));
    expect(ended.data).to.deep.equal({ session_id: 's1', user_laui: 'u1', reason: 'logout' });
  });

  it('given a schema version in the metadata, then it is the served version; none means 1', () => {
    expect(served(recorded('s', 'Probed', {}, { version: 3 })).version).to.equal(3);
    expect(served(recorded('s', 'Probed', {})).version).to.equal(1);
    expect(served(recorded('s', 'Probed', {}, { version: 'two' })).version).to.equal(1);
  });
});
