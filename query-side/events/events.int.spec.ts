import { expect } from 'chai';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { metadataFor } from '../../shared/events.ts';
import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import { catalogClient, createUser } from '../../test/support/catalogFixture.ts';
import { SseClient } from '../../test/support/sseClient.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

interface Envelope {
  position: number;
  stream: string;
  revision: number;
  type: string;
  version: number;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}
interface Page {
  events: Envelope[];
  next_from: number;
}

describe('event stream for analysts and auditors (HTTP, embedded service)', () => {
  let svc: TestService;
  let admin: string;
  let plain: { laui: string; token: string };
  let auditor: { laui: string; token: string };

  before(async () => {
    svc = await startTestService({ EVENTS_HEARTBEAT_MS: '200', EVENTS_SLOW_CLIENT_MS: '500' });
    admin = (await svc.login()).token;
    plain = await createUser(svc, admin, 'pat');
    const created = await svc.client().post('/api/v1/user/create', {
      json: { username: 'audrey', email: 'audrey@example.com', password: 'password-123', must_change_password: false, is_auditor: true },
      token: admin,
    });
    expect(created.status, created.text).to.equal(200);
    auditor = { laui: (created.json as { user_laui: string }).user_laui, token: (await svc.login('audrey', 'password-123')).token };
  });
  after(async () => svc.stop());

  const get = (query: string, token = auditor.token) => svc.client().get(`/api/v1/events${query}`, { token });
  const page = async (query: string, token = auditor.token): Promise<Page> => {
    const reply = await get(query, token);
    expect(reply.status, reply.text).to.equal(200);
    return reply.json as Page;
  };
  /** Appends straight to the log: the events the filters are tried on, nothing else writes them. */
  const appendProbes = async (stream: string, types: string[]): Promise<bigint> => {
    const result = await svc.service.eventStore.append(
      stream,
      types.map((type, index) => ({ type, data: { index }, metadata: metadataFor(null, new Date(), 'probe') })),
      'any',
    );
    return result.position;
  };
  const everything = async (token = auditor.token): Promise<Envelope[]> => {
    const all: Envelope[] = [];
    let from = 0;
    for (;;) {
      const next = await page(`?from=${from}&limit=1000`, token);
      all.push(...next.events);
      if (next.events.length === 0) return all;
      from = next.next_from;
    }
  };

  describe('who may read', () => {
    it('given no token, when reading the events or their stream, then 401', async () => {
      expect((await svc.client().get('/api/v1/events')).status).to.equal(401);
      expect((await svc.client().get('/api/v1/events/stream')).status).to.equal(401);
    });

    it('given a plain user, when reading, then 403 Access denied; an admin and an auditor read', async () => {
      const refused = await get('', plain.token);
      expect(refused.status).to.equal(403);
      expect(refused.json).to.deep.equal({ detail: 'Access denied' });
      expect((await svc.client().get('/api/v1/events/stream', { token: plain.token })).status).to.equal(403);
      expect((await get('', admin)).status).to.equal(200);
      expect((await get('', auditor.token)).status).to.equal(200);
    });

    it('given a plain user granted the auditor role by an admin, when reading, then 200; withdrawn, 403 again', async () => {
      const grant = (is_auditor: boolean, token = admin) =>
        svc.client().post('/api/v1/user/roles', { json: { user_laui: plain.laui, is_auditor }, token });
      expect((await grant(true, plain.token)).status, 'a user cannot grant itself').to.equal(403);
      const granted = await grant(true);
      expect(granted.status, granted.text).to.equal(200);
      expect(granted.json).to.deep.equal({ user_laui: plain.laui, is_auditor: true });
      expect((await get('', plain.token)).status).to.equal(200);
      expect((await grant(false)).status).to.equal(200);
      expect((await get('', plain.token)).status).to.equal(403);
      const unknown = await svc.client().post('/api/v1/user/roles', { json: { user_laui: 'f'.repeat(24), is_auditor: true }, token: admin });
      expect(unknown.status).to.equal(404);
      expect((await svc.client().post('/api/v1/user/roles', { json: { user_laui: 'nope' }, token: admin })).status).to.equal(422);
    });
  });

  describe('GET /api/v1/events', () => {
    it('given probes on two streams, when paged by type prefix, then pages follow each other without gap or repeat', async () => {
      const start = Number(await svc.service.eventStore.headPosition());
      await appendProbes('probe-a', Array.from({ length: 25 }, (_, index) => (index % 2 === 0 ? 'PagingProbed' : 'OtherProbed')));
      await appendProbes('probe-b', ['PagingProbeNoted', 'OtherProbed']);
      const seen: Envelope[] = [];
      let from = start;
      for (let pages = 0; pages < 10; pages += 1) {
        const next = await page(`?from=${from}&limit=5&type=PagingProbe`);
        if (next.events.length === 0) {
          expect(next.next_from).to.equal(from);
          break;
        }
        // The last event examined: the page's last match, or an event past it that did not match.
        expect(next.next_from).to.be.at.least(next.events.at(-1)?.position ?? Infinity);
        seen.push(...next.events);
        from = next.next_from;
      }
      expect(seen.map((event) => event.type)).to.deep.equal([...Array(13).fill('PagingProbed'), 'PagingProbeNoted']);
      expect(seen.map((event) => event.position)).to.deep.equal([...seen.map((event) => event.position)].sort((a, b) => a - b));
      expect(new Set(seen.map((event) => event.position)).size).to.equal(14);
      const first = seen[0];
      expect(first).to.deep.include({ stream: 'probe-a', revision: 0, type: 'PagingProbed', version: 1, data: { index: 0 } });
      expect(Object.keys(first?.metadata ?? {}).sort()).to.deep.equal(['at', 'causation_id', 'correlation_id', 'user_laui']);
    });

    it('given a stream id, when filtered by stream (and type), then only that stream, in revision order, after `from`', async () => {
      await appendProbes('probe-c', ['StreamProbed', 'StreamNoted', 'StreamProbed']);
      await appendProbes('probe-d', ['StreamProbed']);
      await appendProbes('probe-c', ['StreamProbed']);
      const all = await page('?stream=probe-c');
      expect(all.events.map((event) => [event.stream, event.revision])).to.deep.equal([
        ['probe-c', 0],
        ['probe-c', 1],
        ['probe-c', 2],
        ['probe-c', 3],
      ]);
      const after = await page(`?stream=probe-c&from=${all.events[1]?.position}&type=StreamProbed`);
      expect(after.events.map((event) => event.revision)).to.deep.equal([2, 3]);
      const limited = await page('?stream=probe-c&limit=2');
      expect(limited.events.map((event) => event.revision)).to.deep.equal([0, 1]);
      expect(limited.next_from).to.equal(limited.events[1]?.position);
      expect((await page('?stream=no-such-stream')).events).to.deep.equal([]);
    });

    it('given an item, when filtered by item-<laui>, then its history', async () => {
      const api = catalogClient(svc, admin);
      const tree = await api.bootstrap('events-acct');
      const laui = await api.createOk({ item_type: 'payload', name: 'p1', parent_laui: tree.folders.payload, content: { a: 1 } });
      const history = await page(`?stream=item-${laui}`);
      expect(history.events[0]?.type).to.equal('ItemCreated');
      expect(history.events.every((event) => event.stream === `item-${laui}`)).to.equal(true);
    });

    it('given bad query values, when reading, then 422 in the list form', async () => {
      for (const [query, field] of [
        ['?limit=0', 'limit'],
        ['?limit=1001', 'limit'],
        ['?limit=ten', 'limit'],
        ['?from=-1', 'from'],
        ['?from=1.5', 'from'],
        ['?type=', 'type'],
      ] as const) {
        const reply = await get(query);
        expect(reply.status, query).to.equal(422);
        const detail = (reply.json as { detail: Array<{ loc: string[]; type: string; msg: string }> }).detail;
        expect(detail[0]?.loc, query).to.deep.equal(['query', field]);
      }
      const badResume = await svc.client().get('/api/v1/events/stream', { token: auditor.token, headers: { 'last-event-id': 'abc' } });
      expect(badResume.status).to.equal(422);
      expect((badResume.json as { detail: Array<{ loc: string[] }> }).detail[0]?.loc).to.deep.equal(['header', 'last-event-id']);
    });
  });

  describe('secrets', () => {
    it('given users, logins, a logout, a connection and a marketplace token, when every event is served, then no secret appears', async () => {
      const api = catalogClient(svc, admin);
      const tree = await api.bootstrap('secrets-acct');
      const dbPassword = 'db-Pa55word-never-served';
      const laui = await api.createOk({
        item_type: 'connection',
        name: 'warehouse',
        parent_laui: tree.folders.connection,
        content: { host: 'db.example.com', user: 'etl', password: dbPassword, url: `postgres://etl:${dbPassword}@db.example.com/dw` },
      });
      const newPassword = 'db-Rotated-pa55-never-served';
      expect((await api.post('/update', { item_laui: laui, content: { host: 'db.example.com', user: 'etl', password: newPassword } })).status).to.equal(200);
      const marketToken = 'mkt-token-never-served-123';
      expect((await svc.client().post('/api/v1/user/marketplace_access_token/update', { json: { marketplace_access_token: marketToken }, token: admin })).status).to.equal(200);
      const { client } = await svc.login('pat', 'password-123');
      const refreshCookie = client.jar.get('refresh_token') ?? '';
      expect((await client.post('/api/v1/logout')).status).to.equal(200);

      const served = await everything();
      const text = JSON.stringify(served);
      const types = new Set(served.map((event) => event.type));
      for (const type of ['UserCreated', 'ItemCreated', 'ItemUpdated', 'AuthorizationCodeIssued', 'RefreshTokenIssued', 'SessionEnded', 'MarketplaceTokenUpdated']) {
        expect(types, type).to.include(type);
      }
      // What the log holds, secrets included: none of it may be served.
      const raw: RecordedEvent[] = await svc.service.eventStore.readAll({ maxCount: 100_000 });
      const secrets = new Set<string>([dbPassword, newPassword, marketToken, refreshCookie, 'password-123', 'admin-password-1']);
      for (const event of raw) {
        const data = event.data as Record<string, unknown>;
        if (typeof data.password_hash === 'string') secrets.add(data.password_hash);
        collectCiphertexts(data, secrets);
        // A code or refresh token's stream is named after its hash: the lookup key of a live credential.
        const hashed = /^(?:authcode|refresh)-([0-9a-f]{64})$/.exec(event.streamId);
        if (hashed?.[1]) secrets.add(hashed[1]);
      }
      expect(secrets.size).to.be.greaterThan(10);
      for (const secret of secrets) expect(text, 'a secret was served').to.not.include(secret);

      const userCreated = served.find((event) => event.type === 'UserCreated' && event.data.username === 'pat');
      expect(userCreated?.data.password_hash).to.equal('********');
      expect(userCreated?.data).to.include({ username: 'pat', is_admin: false });
      const connection = served.find((event) => event.type === 'ItemCreated' && event.stream === `item-${laui}`);
      const content = (connection?.data.fields as Record<string, unknown>).content as Record<string, unknown>;
      expect(content.$sealed).to.equal('********');
      expect(content.shown).to.deep.include({ host: 'db.example.com', user: 'etl', password: '********' });
      const update = served.find((event) => event.type === 'ItemUpdated' && event.stream === `item-${laui}`);
      expect(((update?.data.changes as Record<string, unknown>).content as Record<string, unknown>).$sealed).to.equal('********');
      const codes = served.filter((event) => event.type === 'AuthorizationCodeIssued');
      expect(codes.every((event) => /^authcode-[0-9a-f]{32}$/.test(event.stream))).to.equal(true);
      const redeemed = served.find((event) => event.type === 'AuthorizationCodeRedeemed' && event.stream === codes[0]?.stream);
      expect(redeemed, 'a code keeps one stream id across its events').to.not.equal(undefined);
      expect(served.find((event) => event.type === 'SessionEnded')?.data).to.have.property('reason');
    });
  });

  describe('GET /api/v1/events/stream (Server-Sent Events)', function () {
    // Waits end on conditions; this only stops a test that would never pass (a loaded machine is slow).
    this.timeout(180_000);
    const open = (query = '', headers: Record<string, string> = {}) =>
      SseClient.open(svc.service.url, `/api/v1/events/stream${query}`, { authorization: `Bearer ${auditor.token}`, ...headers });

    it('given history, when opened with Last-Event-ID, then it resumes exactly after that position and delivers a new event live', async () => {
      const start = Number(await svc.service.eventStore.headPosition());
      await appendProbes('probe-sse', ['SseProbed', 'SseProbed', 'SseProbed']);
      const stream = open('?type=SseProbed', { 'last-event-id': String(start + 1) });
      try {
        await stream.waitFor(() => stream.events.length >= 2, 20_000, 'the history after Last-Event-ID');
        expect(stream.status).to.equal(200);
        expect(stream.events.map((event) => Number(event.id))).to.deep.equal([start + 2, start + 3]);
        expect(stream.events[0]?.event).to.equal('SseProbed');
        expect(stream.events[0]?.data).to.deep.include({ position: start + 2, stream: 'probe-sse', revision: 1, type: 'SseProbed', version: 1 });
        await appendProbes('probe-sse', ['SseProbed']);
        // Delivered on the open stream (how fast is the bench's business, not this test's).
        await stream.waitFor(() => stream.events.length >= 3, 60_000, 'the live event');
        expect(stream.events[2]?.data).to.deep.include({ position: start + 4, revision: 3 });
      } finally {
        stream.close();
      }
    });

    it('given `from`, when opened without Last-Event-ID, then it starts after `from`; and idle, it sends heartbeats', async () => {
      const start = Number(await svc.service.eventStore.headPosition());
      await appendProbes('probe-from', ['FromProbed', 'FromProbed']);
      const stream = open(`?stream=probe-from&from=${start + 1}`);
      try {
        await stream.waitFor(() => stream.events.length >= 1, 20_000, 'the event after from');
        expect(stream.events.map((event) => Number(event.id))).to.deep.equal([start + 2]);
        await stream.waitFor(() => stream.comments.filter((comment) => comment === 'heartbeat').length >= 2, 20_000, 'two heartbeats');
      } finally {
        stream.close();
      }
    });

    it('given a user with 10 open streams, when opening one more, then 429 until one closes', async () => {
      const streams = Array.from({ length: 10 }, () => open('?type=NothingProbed'));
      try {
        for (const stream of streams) await stream.waitFor(() => stream.comments.includes('connected'), 20_000, 'the stream to open');
        const refused = await svc.client().get('/api/v1/events/stream', { token: auditor.token });
        expect(refused.status).to.equal(429);
        expect(refused.json).to.deep.equal({ detail: 'Too many open event streams' });
        streams.pop()?.close();
        // The service learns of the close asynchronously: try again until it has.
        const deadline = Date.now() + 20_000;
        for (;;) {
          const again = open('?type=NothingProbed');
          streams.push(again);
          await again.waitFor(() => again.status !== 0, 20_000, 'an answer');
          if (again.status === 200) break;
          expect(again.status).to.equal(429);
          if (Date.now() > deadline) throw new Error('the closed stream was never released');
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      } finally {
        for (const stream of streams) stream.close();
      }
    });

    it('given a client that stops reading, when events keep coming, then it is dropped with a last event saying why', async () => {
      const stream = open('?type=SlowProbed');
      try {
        await stream.waitFor(() => stream.comments.includes('connected'), 20_000, 'the stream to open');
        stream.pause();
        // Far more than the socket buffers of both ends hold (some MiB on loopback).
        const big = 'x'.repeat(16 * 1024);
        for (let batch = 0; batch < 40; batch += 1) {
          await svc.service.eventStore.append(
            'probe-slow',
            Array.from({ length: 50 }, () => ({ type: 'SlowProbed', data: { big }, metadata: metadataFor(null, new Date(), 'probe') })),
            'any',
          );
        }
        await waitForLog(svc, 'Event stream dropped: slow client');
        stream.resume();
        await stream.waitFor(() => stream.ended, 30_000, 'the stream to end');
        const last = stream.frames.at(-1);
        expect(last?.event).to.equal('dropped');
        expect(JSON.parse(last?.data ?? '{}')).to.have.property('detail').that.matches(/^slow client/);
        expect(stream.events.filter((event) => event.event === 'SlowProbed').length).to.be.lessThan(2000);
      } finally {
        stream.close();
      }
    });
  });
});

const collectCiphertexts = (value: unknown, into: Set<string>): void => {
  if (value === null || typeof value !== 'object') return;
  if ('ct' in value && typeof (value as { ct: unknown }).ct === 'string') into.add((value as { ct: string }).ct);
  for (const inner of Object.values(value)) collectCiphertexts(inner, into);
};

const waitForLog = async (svc: TestService, text: string, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await svc.service.logger.flush();
    const dir = join(svc.dataDir, 'logs');
    const found = readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .some((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8').includes(text));
    if (found) return;
    if (Date.now() > deadline) throw new Error(`no log line with "${text}"`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};
