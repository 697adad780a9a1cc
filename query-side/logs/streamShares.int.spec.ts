import { expect } from 'chai';
import { join } from 'node:path';
import { SseClient } from '../../test/support/sseClient.ts';
import { startSession } from '../../test/support/sessionLogs.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

/**
 * One client cannot take every stream: the logs routes' SSE streams are shared out per anonymous
 * address and per user, anonymous clients together hold at most a part of the total, and the event
 * stream has a total besides its share per user. Refusals come before any stream starts: 429 for a
 * client holding its share, 503 for a full server, each `{detail}` with Retry-After.
 */
describe('Streams are shared out per client (logs SSE, event stream)', function () {
  this.timeout(120_000);
  const clients: SseClient[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  /** Each test starts with every stream of the one before released (the service learns of a close asynchronously). */
  const allReleased = async (svc: TestService): Promise<void> => {
    const deadline = Date.now() + 20_000;
    while (svc.service.logStreams.size > 0) {
      if (Date.now() > deadline) throw new Error(`${svc.service.logStreams.size} log streams still open`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  /** Opens a stream and waits for its status line; the client stays open until the test ends. */
  const openStream = async (svc: TestService, path: string, headers: Record<string, string> = {}): Promise<SseClient> => {
    const client = SseClient.open(svc.service.url, path, headers);
    clients.push(client);
    await client.waitFor(() => client.status !== 0, 20_000, `the status line of ${path}`);
    return client;
  };

  /** A stream that was refused: its status, body and Retry-After (a refusal is a plain JSON answer, not a stream). */
  const refusal = async (svc: TestService, path: string, headers: Record<string, string> = {}) => {
    const reply = await svc.client().get(path, { headers });
    return { status: reply.status, json: reply.json, retryAfter: reply.headers.get('retry-after') };
  };

  describe('with the default shares', () => {
    let svc: TestService;
    let session: string;
    let token: string;
    before(async () => {
      svc = await startTestService();
      session = `/api/v1/logs/session/${startSession(join(svc.dataDir, 'logs')).id}`;
      token = (await svc.login()).token;
    });
    beforeEach(async () => allReleased(svc));
    after(async () => svc?.stop());

    it('given one anonymous client following a session in a loop, when it opens its 9th stream, then 429 {detail} with Retry-After, and a signed-in user still opens streams', async () => {
      for (let opened = 0; opened < 8; opened += 1) expect((await openStream(svc, session)).status).to.equal(200);
      const refused = await refusal(svc, session);
      expect(refused.status).to.equal(429);
      expect(refused.json).to.deep.equal({ detail: 'Too many open log streams' });
      expect(Number(refused.retryAfter)).to.be.greaterThan(0);
      expect(svc.service.logStreams.size).to.equal(8);

      const signedIn = await openStream(svc, session, { authorization: `Bearer ${token}` });
      expect(signedIn.status).to.equal(200);
      await signedIn.waitFor(() => signedIn.events.some((event) => event.event === 'log'), 20_000, 'the first line');
    });

    it('given an anonymous client at its share, when it closes a stream, then it may open one again', async () => {
      const opened = await Promise.all(Array.from({ length: 8 }, () => openStream(svc, session)));
      expect(opened.map((stream) => stream.status)).to.deep.equal(Array(8).fill(200));
      expect((await refusal(svc, session)).status).to.equal(429);
      opened[0]?.close();
      // The service learns of the close asynchronously: until then the answer is still 429.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const again = await openStream(svc, session);
        if (again.status === 200) break;
        expect(again.status).to.equal(429);
        if (Date.now() > deadline) throw new Error('the closed stream was never released');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    });

    it('given a token that does not authenticate, when it follows a session, then the stream is served as anonymous (public route, counted by address)', async () => {
      const stream = await openStream(svc, session, { authorization: 'Bearer not.a.token' });
      expect(stream.status).to.equal(200);
    });
  });

  describe('with small shares (several anonymous addresses behind a trusted proxy)', () => {
    let svc: TestService;
    let session: string;
    let users: string[];
    before(async () => {
      svc = await startTestService({
        TRUST_PROXY_HOPS: '1',
        LOG_STREAMS_MAX: '6',
        LOG_STREAMS_ANONYMOUS_MAX: '4',
        LOG_STREAMS_PER_ADDRESS: '2',
        LOG_STREAMS_PER_USER: '2',
        EVENTS_STREAMS_MAX: '3',
        EVENTS_STREAMS_PER_USER: '2',
      });
      session = `/api/v1/logs/session/${startSession(join(svc.dataDir, 'logs')).id}`;
      const admin = (await svc.login()).token;
      users = [admin];
      for (const username of ['ada', 'bob']) {
        const created = await svc.client().post('/api/v1/user/create', {
          // bob may read the event log too (an auditor).
          json: { username, email: `${username}@example.com`, password: 'password-123', must_change_password: false, is_auditor: username === 'bob' },
          token: admin,
        });
        expect(created.status).to.equal(200);
        users.push((await svc.login(username, 'password-123')).token);
      }
    });
    after(async () => svc?.stop());

    const from = (address: string) => ({ 'x-forwarded-for': address });
    const as = (token: string | undefined) => ({ authorization: `Bearer ${token ?? ''}` });

    it('given anonymous clients holding the anonymous part, then another address gets 503, signed-in users their shares, and a full server 503 for all', async () => {
      for (const address of ['10.0.0.1', '10.0.0.2']) {
        for (let opened = 0; opened < 2; opened += 1) expect((await openStream(svc, session, from(address))).status).to.equal(200);
      }
      const anonymousFull = await refusal(svc, session, from('10.0.0.3'));
      expect(anonymousFull.status).to.equal(503);
      expect(anonymousFull.json).to.deep.equal({ detail: 'No log streams free on the server; try again later' });
      expect(Number(anonymousFull.retryAfter)).to.be.greaterThan(0);

      // The anonymous clients cannot take the rest: it is the signed-in users'.
      expect((await openStream(svc, session, as(users[1]))).status).to.equal(200);
      expect((await openStream(svc, session, as(users[1]))).status).to.equal(200);
      const overShare = await refusal(svc, session, as(users[1]));
      expect(overShare.status).to.equal(429);
      expect(overShare.json).to.deep.equal({ detail: 'Too many open log streams' });

      // 4 anonymous + 2 of ada's: the server is full, for bob as for anyone.
      expect((await refusal(svc, session, as(users[2]))).status).to.equal(503);
      expect(svc.service.logStreams.size).to.equal(6);
    });

    it('given the event stream, when a reader holds its share or the server its total, then 429 and 503 {detail} with Retry-After', async () => {
      const events = '/api/v1/events/stream?type=NothingProbed';
      // The admin (users[0]) and the auditor bob (users[2]) may read the event log.
      for (let opened = 0; opened < 2; opened += 1) expect((await openStream(svc, events, as(users[0]))).status).to.equal(200);
      const overShare = await refusal(svc, events, as(users[0]));
      expect(overShare.status).to.equal(429);
      expect(overShare.json).to.deep.equal({ detail: 'Too many open event streams' });
      expect((await openStream(svc, events, as(users[2]))).status).to.equal(200);
      const full = await refusal(svc, events, as(users[2]));
      expect(full.status).to.equal(503);
      expect(full.json).to.deep.equal({ detail: 'No event streams free on the server; try again later' });
      expect(Number(full.retryAfter)).to.be.greaterThan(0);
    });
  });
});
