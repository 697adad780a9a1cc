import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { START, type RecordedEvent } from '../../../shared/event-store/EventStore.ts';
import { anEvent, expectConflict, numbersOf, someEvents, waitUntil } from '../contract/contractFixtures.ts';
import { describeEventStoreContract } from '../eventStoreContract.ts';
import { EVENT_STORE_SCHEMA_VERSION } from './migrateEventStoreSchema.ts';
import { openSqliteEventStore, type SqliteEventStore } from './SqliteEventStore.ts';

describe('SqliteEventStore', () => {
  let dir = '';
  let files = 0;
  const newFile = (): string => join(dir, `events-${(files += 1)}.db`);
  const opened: SqliteEventStore[] = [];
  const open = (file: string, pollIntervalMs?: number): SqliteEventStore => {
    const store = openSqliteEventStore({ file, synchronous: 'full', pollIntervalMs });
    opened.push(store);
    return store;
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

  describeEventStoreContract('SqliteEventStore', () => open(newFile()));

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

    it('given a child process appending durably, when it is killed with SIGKILL, then every acknowledged append is in the file', async function () {
      this.timeout(30_000);
      const file = newFile();
      const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./appendUntilKilled.ts', import.meta.url)), file], {
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

    it('given a second store on the same file, when the first appends, then the second one\'s subscription sees it by polling', async () => {
      const file = newFile();
      const writer = open(file);
      const reader = open(file, 50);
      const received: RecordedEvent[] = [];
      const subscription = reader.subscribeToAll({ after: START, onEvent: (event) => void received.push(event) });
      await writer.append('s', someEvents(2), 'no_stream');
      await waitUntil(() => received.length === 2, 'the reader sees both events', 3000);
      await writer.append('s', [anEvent(2)], 1);
      await waitUntil(() => received.length === 3, 'the reader sees the live event', 3000);
      await subscription.close();
      expect(numbersOf(received)).to.deep.equal([0, 1, 2]);
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
      this.timeout(10_000);
      const file = newFile();
      const store = open(file);
      const holder = spawn(
        process.execPath,
        [
          '-e',
          `const db = require(process.argv[1])(process.argv[2]); db.exec('BEGIN IMMEDIATE'); console.log('locked');
           setTimeout(() => { db.exec('COMMIT'); db.close(); }, 400);`,
          createRequire(import.meta.url).resolve('better-sqlite3'),
          file,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
      const startedAt = Date.now();
      const result = await store.append('s', [anEvent(0)], 'no_stream');
      expect(Date.now() - startedAt).to.be.at.least(200);
      expect(result.nextExpectedRevision).to.equal(0);
      await new Promise((resolve) => holder.on('close', resolve));
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
});
