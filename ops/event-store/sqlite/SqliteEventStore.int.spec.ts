import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { START, STORED_DATA_JSON, type AppendResult, type RecordedEvent } from '../../../shared/event-store/EventStore.ts';
import { anEvent, delay, expectConflict, numbersOf, someEvents, waitUntil } from '../../../test/contracts/eventStore/contractFixtures.ts';
import { describeEventStoreContract } from '../../../test/contracts/eventStoreContract.ts';
import { AppendBatchWriter } from './AppendBatchWriter.ts';
import { EVENT_STORE_SCHEMA_VERSION, LEGACY_EVENTS_SCHEMA } from './migrateEventStoreSchema.ts';
import { openEventStoreDatabase } from './openEventStoreDatabase.ts';
import { openSqliteEventStore, type SqliteEventStore, type SqliteWriterPlacement } from './SqliteEventStore.ts';
import { SqliteWriterThread } from './SqliteWriterThread.ts';

const PLACEMENTS: SqliteWriterPlacement[] = ['worker-thread', 'main-thread'];

describe('SqliteEventStore', () => {
  let dir = '';
  let files = 0;
  const newFile = (): string => join(dir, `events-${(files += 1)}.db`);
  const opened: SqliteEventStore[] = [];
  const open = (file: string, pollIntervalMs?: number, writer?: SqliteWriterPlacement): SqliteEventStore => {
    const store = openSqliteEventStore({ file, synchronous: 'full', pollIntervalMs, writer });
    opened.push(store);
    return store;
  };
  /** Another connection of this process holding the write lock until it commits. */
  const holdWriteLock = (file: string): { release(): void } => {
    const db = new Database(file);
    db.exec('BEGIN IMMEDIATE');
    return {
      release: () => {
        db.exec('COMMIT');
        db.close();
      },
    };
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sqlite-event-store-'));
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  for (const writer of PLACEMENTS) {
    // Polled once an hour: the contract's live delivery must then come from the store's own commit.
    describeEventStoreContract(`SqliteEventStore (writer: ${writer})`, async () => {
      const store = open(newFile(), 3_600_000, writer);
      await store.writerReady();
      return store;
    });
  }

  describe('durability and sharing a file', () => {
    it('given appended events, when the store is closed and the file reopened, then every event is there', async () => {
      const file = newFile();
      const first = open(file);
      await first.append('s', someEvents(3), 'no_stream');
      await first.append('t', [anEvent(3)], 'no_stream');
      await first.close();
      const reopened = open(file);
      expect(numbersOf(await reopened.readAll())).to.deep.equal([0, 1, 2, 3]);
      expect((await reopened.append('s', [anEvent(4)], 2)).nextExpectedRevision).to.equal(3);
    });

    it('given a file, when opened, then it is in WAL mode at the current schema version', async () => {
      const file = newFile();
      open(file);
      const db = new Database(file, { readonly: true });
      try {
        expect(db.pragma('journal_mode', { simple: true })).to.equal('wal');
        expect(db.pragma('user_version', { simple: true })).to.equal(EVENT_STORE_SCHEMA_VERSION);
      } finally {
        db.close();
      }
    });

    it('given a file from a newer schema, when opened, then it refuses rather than guess', () => {
      const file = newFile();
      const db = new Database(file);
      db.pragma(`user_version = ${EVENT_STORE_SCHEMA_VERSION + 1}`);
      db.close();
      expect(() => open(file)).to.throw(/newer than this code knows/);
    });

    for (const placement of PLACEMENTS) {
      it(`given a child process appending durably (writer: ${placement}), when it is killed with SIGKILL, then every acknowledged append is in the file`, async function () {
        this.timeout(30_000);
        const file = newFile();
        const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./appendUntilKilled.ts', import.meta.url)), file, placement], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        let errors = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
        const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));
        try {
          await waitUntil(() => output.split('\n').length > 400 || errors !== '', '400 acknowledged appends', 20_000);
        } finally {
          child.kill('SIGKILL');
        }
        expect(await exited, errors).to.equal('SIGKILL');

        // Highest acknowledged seq per writer; each writer appends seq 0, 1, 2... in order.
        const acknowledged = new Map<string, number>();
        for (const line of output.split('\n').filter(Boolean)) {
          const [writer, seq] = line.split(' ').map(Number);
          acknowledged.set(`writer-${writer}`, Math.max(acknowledged.get(`writer-${writer}`) ?? -1, seq ?? -1));
        }
        expect(acknowledged.size).to.equal(8);
        const reopened = open(file);
        for (const [streamId, highestSeq] of acknowledged) {
          const seqs = (await reopened.readStream(streamId)).map((event) => event.data.seq);
          expect(seqs.slice(0, highestSeq + 1), `${streamId} lost acknowledged events`).to.deep.equal(
            Array.from({ length: highestSeq + 1 }, (_, seq) => seq),
          );
        }
      });
    }

    it('given a second store on the same file, when the first appends, then the second one\'s subscription sees it by polling', async () => {
      const file = newFile();
      const writer = open(file);
      const reader = open(file, 50);
      const received: RecordedEvent[] = [];
      const subscription = reader.subscribeToAll({ after: START, onEvent: (event) => void received.push(event) });
      await writer.append('s', someEvents(2), 'no_stream');
      await waitUntil(() => received.length === 2, 'the reader sees both events', 60_000);
      await writer.append('s', [anEvent(2)], 1);
      await waitUntil(() => received.length === 3, 'the reader sees the live event', 60_000);
      await subscription.close();
      expect(numbersOf(received)).to.deep.equal([0, 1, 2]);
    });

    for (const placement of PLACEMENTS) {
      it(`given two stores appending in turn to one file (writer: ${placement}), when each reads the log back, then both read exactly what a fresh store reads from the file`, async () => {
        const file = newFile();
        const first = open(file, undefined, placement);
        const second = open(file, undefined, placement);
        // Runs of each store's own commits with the other's in between: the first's reads after
        // its own events come from memory, and must still show the second's events where they are.
        for (let round = 0; round < 4; round += 1) {
          await Promise.all([first.append(`a-${round}`, someEvents(3), 'no_stream'), first.append(`b-${round}`, someEvents(2), 'no_stream')]);
          await second.append(`c-${round}`, someEvents(round % 2 === 0 ? 1 : 2), 'no_stream');
        }
        await first.append('a-0', [anEvent(3)], 2);
        const fresh = open(file, undefined, placement);
        const all = await fresh.readAll({ maxCount: 1000 });
        expect(all).to.have.length(4 * 5 + 6 + 1);
        for (const store of [first, second]) {
          for (let after = 0; after <= all.length; after += 1) {
            // The JSON text a store kept from its own commit is a hint for serving, not part of the event.
            expect((await store.readAll({ after: BigInt(after), maxCount: 4 })).map(withoutStoredJson), `after ${after}`).to.deep.equal(all.slice(after, after + 4).map(withoutStoredJson));
          }
        }
      });
    }

    it('given a subscription on a store whose own commits alternate with another store\'s, when both append, then it receives every event once, in position order', async () => {
      const file = newFile();
      const own = open(file, 50);
      const other = open(file);
      const received: RecordedEvent[] = [];
      const subscription = own.subscribeToAll({ after: START, onEvent: (event) => void received.push(event) });
      for (let round = 0; round < 5; round += 1) {
        await own.append(`own-${round}`, someEvents(2), 'no_stream');
        await other.append(`other-${round}`, someEvents(1), 'no_stream');
      }
      await waitUntil(() => received.length === 15, 'all 15 events', 60_000);
      await subscription.close();
      expect(received.map((event) => Number(event.position))).to.deep.equal(Array.from({ length: 15 }, (_, index) => index + 1));
      expect(received.map((event) => event.streamId)).to.deep.equal(Array.from({ length: 5 }, (_, round) => [`own-${round}`, `own-${round}`, `other-${round}`]).flat());
    });

    it('given a second store on the same file that appended, when the first appends expecting its stale revision 0, then it conflicts with actual 1: revisions come from the file, not a cache', async () => {
      const file = newFile();
      const first = open(file);
      const second = open(file);
      expect((await first.append('s', [anEvent(0)], 'any')).nextExpectedRevision).to.equal(0);
      await second.append('s', [anEvent(1)], 0);
      expect((await expectConflict(first.append('s', [anEvent(2)], 0))).actual).to.equal(1);
      expect((await first.append('s', [anEvent(2)], 1)).nextExpectedRevision).to.equal(2);
    });

    it('given another process holding the write lock, when appending, then the append waits for it and succeeds', async function () {
      this.timeout(60_000);
      const file = newFile();
      const store = open(file);
      // The holder commits when told to (a line on its stdin), not after a delay: the order is the test's.
      const holder = spawn(
        process.execPath,
        [
          '-e',
          `const db = require(process.argv[1])(process.argv[2]); db.exec('BEGIN IMMEDIATE'); console.log('locked');
           process.stdin.once('data', () => { db.exec('COMMIT'); db.close(); process.exit(0); });`,
          createRequire(import.meta.url).resolve('better-sqlite3'),
          file,
        ],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      );
      const holderClosed = new Promise((resolve) => holder.on('close', resolve));
      await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
      let settled = false;
      const appended = store.append('s', [anEvent(0)], 'no_stream');
      void appended.then(
        () => (settled = true),
        () => (settled = true),
      );
      // Time for an append that would not wait to fail (a slow machine only gives it more); this one is still waiting.
      await delay(200);
      expect(settled, 'the append waits while the lock is held').to.equal(false);
      holder.stdin.end('commit\n');
      const result = await appended;
      expect(result.nextExpectedRevision).to.equal(0);
      await holderClosed;
    });
  });

  describe('the compact log (schema 2) and the legacy events table', () => {
    /** A file as the release before left it: schema 1, rows of JSON text in `events`. */
    const legacyFile = (rows: Array<[stream: string, revision: number, n: number]>): string => {
      const file = newFile();
      const db = new Database(file);
      db.pragma('page_size = 1024');
      db.pragma('journal_mode = WAL');
      db.exec(LEGACY_EVENTS_SCHEMA);
      db.pragma('user_version = 1');
      const insert = db.prepare('INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
      for (const [stream, revision, n] of rows) {
        insert.run(stream, revision, `legacy-id-${n}`, 'ThingHappened', `{"n": ${n}}`, '{"user_laui":null,"correlation_id":"c","causation_id":null,"at":"2025-01-01T00:00:00.000Z"}', '2025-01-01T00:00:00.000Z');
      }
      db.close();
      return file;
    };

    it('given a file of the release before, when opened and appended to, then its rows read as they were and the log goes on after them, streams continuing their revisions', async () => {
      const file = legacyFile([
        ['s', 0, 0],
        ['t', 0, 1],
        ['s', 1, 2],
      ]);
      const store = open(file);
      const legacy = await store.readAll();
      expect(legacy.map((event) => [event.position, event.streamId, event.revision, event.id, event.recordedAt])).to.deep.equal([
        [1n, 's', 0, 'legacy-id-0', '2025-01-01T00:00:00.000Z'],
        [2n, 't', 0, 'legacy-id-1', '2025-01-01T00:00:00.000Z'],
        [3n, 's', 1, 'legacy-id-2', '2025-01-01T00:00:00.000Z'],
      ]);
      await expectConflict(store.append('s', [anEvent(9)], 0));
      expect((await store.append('s', [anEvent(3), anEvent(4)], 1)).nextExpectedRevision).to.equal(3);
      expect((await store.append('u', [anEvent(5)], 'no_stream')).position).to.equal(6n);
      const reopened = open(file);
      expect(numbersOf(await reopened.readAll())).to.deep.equal([0, 1, 2, 3, 4, 5]);
      expect(numbersOf(await reopened.readAll({ after: 2n, maxCount: 2 }))).to.deep.equal([2, 3]);
      expect((await reopened.readStream('s')).map((event) => [event.revision, event.data.n])).to.deep.equal([
        [0, 0],
        [1, 2],
        [2, 3],
        [3, 4],
      ]);
      expect(numbersOf(await reopened.readStream('s', { fromRevision: 1, toRevision: 2 }))).to.deep.equal([2, 3]);
      expect(await reopened.headPosition()).to.equal(6n);
      const db = new Database(file, { readonly: true });
      try {
        expect(db.prepare('SELECT COUNT(*) FROM events').pluck().get(), 'the legacy rows are never rewritten').to.equal(3);
        expect(db.prepare('SELECT COUNT(*) FROM log').pluck().get()).to.equal(3);
      } finally {
        db.close();
      }
    });

    it('given data of every JSON kind and the strings the encoding shortens, when appended and read back from the file, then data, metadata, id and time are what was appended', async () => {
      const file = newFile();
      const writer = open(file);
      const data = {
        laui: '6b0b7c69086ee14a829af6d6',
        id: '30eb7d27-0a79-4da1-bda7-0a69215e45ba',
        again: '30eb7d27-0a79-4da1-bda7-0a69215e45ba',
        upper: '6B0B7C69086EE14A829AF6D6',
        at: '2026-11-29T01:14:17.971Z',
        long_ago: '1970-01-01T00:00:00.000Z',
        not_a_time: '2026-13-29T01:14:17.971Z',
        text: 'é 😀 "quoted" \n',
        numbers: [0, -1, 1.5, 2 ** 53, -(2 ** 40), 1e-300],
        nested: { empty: {}, list: [], flags: [true, false, null] },
        ['__proto__']: { polluted: true },
        state: 'running',
      };
      const metadata = { user_laui: '6b0b7c68086ee14a829af6a6', correlation_id: 'corr', causation_id: null, at: '2026-11-29T01:14:18.019Z' };
      await writer.append('s', [{ type: 'RoundTripped', data: JSON.parse(JSON.stringify(data)) as Record<string, unknown>, metadata }], 'no_stream');
      const [event] = await open(file).readAll();
      expect(JSON.stringify(event?.data)).to.equal(JSON.stringify(data));
      expect(Object.getPrototypeOf(event?.data)).to.equal(Object.prototype);
      expect(event?.metadata).to.deep.equal({ ...metadata, version: 1 });
      expect(event?.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const [tail] = await writer.readAll();
      expect(event?.id).to.equal(tail?.id);
      expect(event?.recordedAt).to.equal(tail?.recordedAt);
    });

    it('given ids that are not UUIDs and a commit time that is not an exact ISO time (a writer of another kind), when read, then both are as written', async () => {
      const file = newFile();
      const db = openEventStoreDatabase(file, 'normal');
      try {
        const metadata = JSON.stringify({ user_laui: null, correlation_id: 'c', causation_id: null, at: '2024-05-01T10:00:00.000Z', version: 1 });
        const ids = ['0123456789abcdef0123456789abcdef', 'plain-id'];
        new AppendBatchWriter(db).write([{ streamId: 's', expected: 'no_stream', events: ids.map((id, n) => ({ id, type: 'ThingHappened', data: `{"n":${n}}`, metadata })) }], 'yesterday');
      } finally {
        db.close();
      }
      const events = await open(file).readAll();
      expect(events.map((event) => [event.id, event.recordedAt, event.data.n])).to.deep.equal([
        ['0123456789abcdef0123456789abcdef', 'yesterday', 0],
        ['plain-id', 'yesterday', 1],
      ]);
    });

    it('given a command of several events in one commit, when stored, then its metadata is stored once', async () => {
      const file = newFile();
      const store = open(file);
      const metadata = { user_laui: null, correlation_id: 'one-command', causation_id: null, at: '2024-05-01T10:00:00.000Z' };
      const events = (count: number) => Array.from({ length: count }, (_, n) => ({ type: 'ThingHappened', data: { n }, metadata }));
      await store.appendAtomically([
        { streamId: 'a', events: events(3), expected: 'no_stream' },
        { streamId: 'b', events: events(2), expected: 'no_stream' },
      ]);
      const db = new Database(file, { readonly: true });
      try {
        expect(db.prepare('SELECT COUNT(*) FROM log').pluck().get()).to.equal(5);
        expect(db.prepare('SELECT COUNT(DISTINCT metadata) FROM log').pluck().get()).to.equal(1);
      } finally {
        db.close();
      }
    });

    it('given one commit whose events alternate between two metadata, when read back, then each event has its own', async () => {
      const store = open(newFile());
      const first = { user_laui: null, correlation_id: 'first', causation_id: null, at: '2024-05-01T10:00:00.000Z' };
      const second = { user_laui: null, correlation_id: 'second', causation_id: null, at: '2024-05-01T10:00:01.000Z' };
      const given = [first, second, first, second, second, first];
      await store.appendAtomically([{ streamId: 'mixed', events: given.map((metadata, n) => ({ type: 'ThingHappened', data: { n }, metadata })), expected: 'no_stream' }]);
      const read = await store.readStream('mixed');
      expect(read.map((event) => [event.data.n, event.metadata.correlation_id, event.metadata.at])).to.deep.equal(given.map((metadata, n) => [n, metadata.correlation_id, metadata.at]));
    });
  });

  describe('subscriptions that accept few events', () => {
    it('given events this store just committed, when a subscription accepts only one of them, then only that one\'s data is decoded (the others are passed over undecoded)', async () => {
      // Given: 40 events whose data carry a marker, committed by this store (its tail holds them).
      const store = open(newFile());
      await store.append('marked', Array.from({ length: 40 }, (_, n) => ({ type: 'ThingHappened', data: { n, marker: 'decode-me' }, metadata: anEvent(n).metadata })), 'no_stream');
      const twentieth = (await store.readStream('marked'))[19]?.position;
      const parse = JSON.parse;
      let decoded = 0;
      JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
        if (typeof text === 'string' && text.includes('decode-me')) decoded += 1;
        return parse(text, reviver);
      }) as typeof JSON.parse;
      const received: RecordedEvent[] = [];
      let caughtUp = false;
      try {
        // When
        const subscription = store.subscribeToAll({ after: START, accepts: (event) => event.position === twentieth, onEvent: (event) => void received.push(event), onCaughtUp: () => (caughtUp = true) });
        await waitUntil(() => caughtUp, 'caught up');
        await subscription.close();
      } finally {
        JSON.parse = parse;
      }
      // Then
      expect(received.map((event) => event.data.n)).to.deep.equal([19]);
      expect(decoded, 'data texts decoded').to.equal(1);
    });
  });

  describe('group commit', () => {
    it('given three appends in the same tick, one of them conflicting, when flushed, then one transaction commits the other two and rejects only the conflict', async () => {
      const store = open(newFile());
      await store.append('taken', [anEvent(0)], 'no_stream');
      const before = store.groupCommitStats();
      const outcomes = await Promise.allSettled([
        store.append('a', [anEvent(1)], 'no_stream'),
        store.append('taken', [anEvent(2)], 'no_stream'),
        store.append('b', someEvents(2, 3), 'no_stream'),
      ]);
      expect(outcomes.map((outcome) => outcome.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect(store.groupCommitStats()).to.deep.equal({ batches: before.batches + 1, appends: before.appends + 3 });
      expect(numbersOf(await store.readAll())).to.deep.equal([0, 1, 3, 4]);
      expect(numbersOf(await store.readStream('taken'))).to.deep.equal([0]);
    });

    it('given 64 appends to distinct streams in one tick, when flushed, then a single transaction carries them all', async () => {
      const store = open(newFile());
      const results = await Promise.all(Array.from({ length: 64 }, (_, n) => store.append(`s-${n}`, [anEvent(n)], 'no_stream')));
      expect(results).to.have.length(64);
      expect(store.groupCommitStats()).to.deep.equal({ batches: 1, appends: 64 });
    });

    it('given an append still queued, when the store closes, then it is written before the file closes', async () => {
      const file = newFile();
      const store = open(file);
      const pending = store.append('s', [anEvent(0)], 'no_stream');
      await store.close();
      expect((await pending).nextExpectedRevision).to.equal(0);
      expect(numbersOf(await open(file).readAll())).to.deep.equal([0]);
    });
  });

  describe('the writer thread', () => {
    it('given the write lock held by another connection, when appending, then the event loop keeps turning while the append waits', async () => {
      const file = newFile();
      const store = open(file);
      await store.writerReady();
      const lock = holdWriteLock(file);
      let turns = 0;
      const ticking = setInterval(() => (turns += 1), 5);
      try {
        let settled = false;
        const appended = store.append('s', [anEvent(0)], 'no_stream');
        void appended.finally(() => (settled = true)).catch(() => undefined);
        // Ten timer turns while the append waits for the lock, counted, not timed: on the main thread the
        // busy wait would block every timer until the lock is released, which happens only after them.
        await waitUntil(() => turns >= 10, 'ten timer turns while the append waits', 60_000);
        expect(settled, 'the append still waits for the lock').to.equal(false);
        lock.release();
        expect((await appended).nextExpectedRevision).to.equal(0);
      } finally {
        clearInterval(ticking);
      }
    });

    it('given a batch in flight, when appends arrive in later ticks, then they go together as the next batch, committed after it', async () => {
      const file = newFile();
      const store = open(file);
      await store.writerReady();
      const lock = holdWriteLock(file);
      const first = store.append('first', [anEvent(0)], 'no_stream');
      await delay(20);
      const queued: Array<Promise<AppendResult>> = [];
      for (let n = 1; n <= 3; n += 1) {
        queued.push(store.append(`queued-${n}`, [anEvent(n)], 'no_stream'));
        await delay(5);
      }
      lock.release();
      const [firstResult, ...queuedResults] = await Promise.all([first, ...queued]);
      expect(store.groupCommitStats()).to.deep.equal({ batches: 2, appends: 4 });
      for (const result of queuedResults) expect(result.position > (firstResult?.position ?? START)).to.equal(true);
      expect(numbersOf(await store.readAll())).to.deep.equal([0, 1, 2, 3]);
    });

    it('given appends queued behind a batch in flight, when the store closes, then close resolves only once all of them are committed', async () => {
      const file = newFile();
      const store = open(file);
      await store.writerReady();
      const lock = holdWriteLock(file);
      const inFlight = store.append('s', [anEvent(0)], 'no_stream');
      await delay(20);
      const queued = store.append('t', [anEvent(1)], 'no_stream');
      let closed = false;
      const closing = store.close().then(() => (closed = true));
      await delay(50);
      expect(closed, 'closed while appends were pending').to.equal(false);
      lock.release();
      await closing;
      expect((await inFlight).nextExpectedRevision).to.equal(0);
      expect((await queued).nextExpectedRevision).to.equal(0);
      expect(numbersOf(await open(file).readAll())).to.deep.equal([0, 1]);
    });

    it('given acknowledged appends from many writers, when this thread reads right after each, then it sees every one of them', async () => {
      const store = open(newFile());
      await Promise.all(
        Array.from({ length: 16 }, async (_, writer) => {
          for (let revision = 0; revision < 10; revision += 1) {
            const result = await store.append(`w-${writer}`, [anEvent(revision)], revision === 0 ? 'no_stream' : revision - 1);
            const stream = await store.readStream(`w-${writer}`);
            expect(stream.at(-1)?.position).to.equal(result.position);
            expect((await store.headPosition()) >= result.position).to.equal(true);
          }
        }),
      );
    });

    it("given ~6 MiB of WAL, below the writer's own checkpoint backstop, when the checkpointer thread runs, then the database file holds the pages and a reopened store reads every event", async () => {
      const file = newFile();
      const store = open(file);
      await store.writerReady();
      // ~6 MiB of WAL: below the writer's 16 MiB backstop, so only the checkpointer copies it into the file.
      const padding = 'x'.repeat(2000);
      for (let batch = 0; batch < 30; batch += 1) {
        await Promise.all(Array.from({ length: 50 }, (_, n) => store.append(`s-${batch}-${n}`, [{ ...anEvent(n), data: { n, padding } }], 'no_stream')));
      }
      const fileBytes = () => statSync(file).size;
      await waitUntil(() => fileBytes() > 3 * 1024 * 1024, 'the database file holds the checkpointed pages', 60_000);
      await store.close();
      expect(numbersOf(await open(file).readAll({ maxCount: 2000 }))).to.have.length(1500);
    });

    it('given a file the writer thread cannot open, when committing, then it is rejected at once, not left pending', async () => {
      const thread = new SqliteWriterThread({ file: join(dir, 'no-such-directory', 'events.db'), synchronous: 'full' });
      const failure = async (promise: Promise<unknown>): Promise<unknown> => promise.then(() => expect.fail('expected a rejection'), (error: unknown) => error);
      expect(String(await failure(thread.ready()))).to.match(/SQLite writer thread failed/);
      expect(String(await failure(thread.commit([{ streamId: 's', expected: 'any', events: [] }], new Date().toISOString())))).to.match(
        /SQLite writer thread failed/,
      );
      await thread.close();
    });
  });
});

function withoutStoredJson(event: RecordedEvent): RecordedEvent {
  const { [STORED_DATA_JSON]: _stored, ...rest } = event;
  return rest;
}
