import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventStore } from '../../shared/event-store/EventStore.ts';
import { delayedDelivery } from '../../test/support/delayedDelivery.ts';
import { catalogClient, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { HttpClient } from '../../test/support/HttpClient.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { scryptPasswords } from '../auth/scryptPasswords.ts';
import { loadConfig } from '../config.ts';
import { startService, type Service } from '../service.ts';

/**
 * Read your writes across processes: two api processes on one log, the second one's read models
 * held behind a gate (a projector that is behind, deterministically), so that what a read without
 * X-Read-After gets and what one with it waits for are both seen.
 */
describe('read your writes across api processes (X-Event-Position, X-Read-After; HTTP, two services on one log)', function () {
  this.timeout(120_000);
  let writer: TestService;
  let reader: Service;
  let readerRegistry = '';
  let admin: CatalogClient;
  let held = false;
  let openGate: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();

  /** The reader's view of the log: while held, each event waits for the gate before it is applied. */
  const gated = (store: EventStore): EventStore =>
    delayedDelivery(store, async () => {
      if (held) await gate;
    });

  const hold = (): void => {
    held = true;
    gate = new Promise((resolve) => {
      openGate = () => {
        held = false;
        resolve();
      };
    });
  };

  before(async () => {
    // The writer's own bound is short: the "not reached" case below waits on it.
    writer = await startTestService({ READ_YOUR_WRITES_TIMEOUT_MS: '300' });
    // A second api process on the same DATA_DIR: its own in-memory read models, following the log
    // (and, as root, its own run identities' registry: it runs no code, but claims them all the same).
    readerRegistry = mkdtempSync(join(tmpdir(), 'run-uids-'));
    const config = { ...loadConfig({ PORT: '0', DATA_DIR: writer.dataDir, ADMIN_PASSWORD: 'unused-admin-password', SQLITE_SYNCHRONOUS: 'normal', READ_YOUR_WRITES_TIMEOUT_MS: '60000', WORKER_POOL_SIZE: '0', WORKER_RUN_AS_REGISTRY: readerRegistry }), role: 'api' as const };
    reader = await startService(config, { passwords: scryptPasswords(2 ** 10), announce: () => undefined, eventStoreView: gated });
    admin = catalogClient(writer, (await writer.login()).token);
  });

  after(async () => {
    openGate();
    await reader?.close();
    await writer?.stop();
    rmSync(readerRegistry, { recursive: true, force: true });
  });

  it('given a write through one process, when the other is behind, then without X-Read-After it answers 404 and with it the read waits for the write and answers it', async () => {
    const { folders } = await admin.bootstrap('ryw-co');
    hold();
    const created = await admin.create({ item_type: 'payload', name: 'written-here', parent_laui: folders.payload, content: { n: 1 } });
    expect(created.status, created.text).to.equal(200);
    const position = created.headers.get('x-event-position');
    expect(position, 'a write answers its log position').to.match(/^\d+$/);
    const laui = (created.json as { item_laui: string }).item_laui;
    const other = new HttpClient(reader.url);
    const path = `/api/v1/catalog/get?item_laui=${laui}`;

    const stale = await other.get(path, { token: admin.token });
    expect(stale.status, 'the other process has not applied the write yet').to.equal(404);

    const waiting = other.get(path, { token: admin.token, headers: { 'x-read-after': String(position) } });
    let answered = false;
    void waiting.then(() => (answered = true));
    // A request of its own to the same process goes through: only the reader with the header waits.
    expect((await other.get('/healthz')).status).to.equal(200);
    expect(answered, 'the read waits while the read models are behind its position').to.equal(false);
    openGate();
    const fresh = await waiting;
    expect(fresh.status, fresh.text).to.equal(200);
    expect((fresh.json as { laui: string; name: string }).name).to.equal('written-here');
    expect(fresh.headers.get('x-read-after-reached')).to.equal(null);
  });

  it('given reads, when they write nothing, then they carry no X-Event-Position; a later write answers a higher one', async () => {
    const { project_laui: project, folders } = await admin.bootstrap('ryw-order');
    const read = await admin.get({ item_laui: project });
    expect(read.status).to.equal(200);
    expect(read.headers.get('x-event-position')).to.equal(null);
    const first = await admin.create({ item_type: 'payload', name: 'one', parent_laui: folders.payload, content: {} });
    const second = await admin.create({ item_type: 'payload', name: 'two', parent_laui: folders.payload, content: {} });
    const [one, two] = [first, second].map((reply) => BigInt(String(reply.headers.get('x-event-position'))));
    expect(two! > one!, `${String(two)} after ${String(one)}`).to.equal(true);
  });

  it('given X-Read-After that is not a position, when sent, then 400 with the spec error body', async () => {
    for (const value of ['abc', '-1', '1.5', '99999999999999999999']) {
      const reply = await writer.client().get('/api/v1/user/me', { token: admin.token, headers: { 'x-read-after': value } });
      expect(reply.status, value).to.equal(400);
      expect((reply.json as { detail: string }).detail).to.match(/^X-Read-After must be a log position/);
    }
  });

  it('given X-Read-After beyond what the read models will reach within the bound, when read, then it is answered after the bound, marked not reached', async () => {
    const head = await writer.service.eventStore.headPosition();
    const reply = await writer.client().get('/api/v1/user/me', { token: admin.token, headers: { 'x-read-after': String(head + 1000n) } });
    expect(reply.status).to.equal(200);
    expect(reply.headers.get('x-read-after-reached')).to.equal('false');
  });

  it('given `from` past the end of the log, when events are read or streamed, then 400 with the spec error body; `from` at the end is an empty page', async () => {
    const head = await writer.service.eventStore.headPosition();
    const atEnd = await writer.client().get(`/api/v1/events?from=${head}`, { token: admin.token });
    expect(atEnd.status, atEnd.text).to.equal(200);
    expect(atEnd.json).to.deep.include({ events: [], next_from: Number(head) });
    for (const path of [`/api/v1/events?from=${head + 1000n}`, `/api/v1/events?from=${head + 1000n}&type=Item`, `/api/v1/events/stream?from=${head + 1000n}`]) {
      const past = await writer.client().get(path, { token: admin.token });
      expect(past.status, path).to.equal(400);
      expect((past.json as { detail: string }).detail, path).to.match(/past the end of the log/);
    }
    const resumed = await writer.client().get('/api/v1/events/stream', { token: admin.token, headers: { 'last-event-id': String(head + 5n) } });
    expect(resumed.status).to.equal(400);
  });
});
