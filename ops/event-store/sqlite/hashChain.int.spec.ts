import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { chainAnchor, GENESIS_HASH } from '../../../shared/event-store/hashChain.ts';
import { finishVerification, startVerification, verifyNext, type ChainVerification, type RawEnvelope } from '../../../shared/event-store/verifyChain.ts';
import { anEvent, someEvents } from '../../../test/contracts/eventStore/contractFixtures.ts';
import { openSqliteEventStore, type SqliteEventStore, type SqliteWriterPlacement } from './SqliteEventStore.ts';
import { packJson } from './packedJson.ts';

/** Every event of a store's chain, page by page, as `events verify` reads it. */
const wholeChain = async (store: SqliteEventStore, pageSize = 7): Promise<RawEnvelope[]> => {
  const all: RawEnvelope[] = [];
  for (;;) {
    const page = await store.chain.readChain({ after: BigInt(all.at(-1)?.position ?? 0), maxCount: pageSize });
    if (page.length === 0) return all;
    all.push(...page);
  }
};

const verified = (events: RawEnvelope[]): ChainVerification => finishVerification(events.reduce(verifyNext, startVerification()));

/** The layout of schema version 1, before the chain: a file written by an older release. */
const legacyFile = (file: string, events: number): void => {
  const db = new Database(file);
  db.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, stream_id TEXT NOT NULL, revision INTEGER NOT NULL, id TEXT NOT NULL,
             type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, recorded_at TEXT NOT NULL);
           CREATE UNIQUE INDEX events_stream_revision ON events (stream_id, revision);
           PRAGMA user_version = 1;`);
  const insert = db.prepare('INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  for (let n = 0; n < events; n += 1) insert.run(`old-${n % 2}`, Math.floor(n / 2), `id-${n}`, 'OldThing', JSON.stringify({ n }), JSON.stringify({ user_laui: null, at: 't' }), 't');
  db.close();
};

describe('SqliteEventStore: the hash chain (hash written with each row, followed across writers)', () => {
  let dir = '';
  let files = 0;
  const newFile = (): string => join(dir, `chain-${(files += 1)}.db`);
  const opened: SqliteEventStore[] = [];
  const open = (file: string, writer: SqliteWriterPlacement = 'worker-thread'): SqliteEventStore => {
    const store = openSqliteEventStore({ file, writer, pollIntervalMs: 50 });
    opened.push(store);
    return store;
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sqlite-hash-chain-'));
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('given appends, atomic runs and a conflict from two stores on one file in turn, when the chain is read, then every event follows the one before from the genesis', async () => {
    const file = newFile();
    const threaded = open(file, 'worker-thread');
    const inline = open(file, 'main-thread');
    for (let round = 0; round < 4; round += 1) {
      await threaded.append(`a-${round}`, someEvents(3, round * 10), 'any');
      await Promise.allSettled([inline.append('shared', [anEvent(round)], 'any'), inline.append('shared', [anEvent(99)], 0)]);
      await inline.appendAtomically([
        { streamId: `b-${round}`, events: someEvents(2), expected: 'no_stream' },
        { streamId: `c-${round}`, events: someEvents(1), expected: 'no_stream' },
      ]);
    }
    const events = await wholeChain(threaded);
    expect(events[0]?.prev_hash).to.equal(GENESIS_HASH);
    const state = verified(events);
    expect(state.failure).to.equal(null);
    expect(state.hashed).to.equal(events.length).and.to.be.greaterThan(20);
    const links = await inline.chain.linksAt(events.map((event) => BigInt(event.position)));
    expect(events.map((event) => links.get(BigInt(event.position)))).to.deep.equal(events.map(({ hash, prev_hash }) => ({ hash, prev_hash })));
    // Far apart (a filtered page): looked up one by one, the same links.
    const sparse = [events[1], events.at(-1)] as RawEnvelope[];
    const sparseLinks = await inline.chain.linksAt(sparse.map((event) => BigInt(event.position)));
    expect(sparse.map((event) => sparseLinks.get(BigInt(event.position)))).to.deep.equal(sparse.map(({ hash, prev_hash }) => ({ hash, prev_hash })));
  });

  it('given a row whose data is changed in the file, when the chain is verified, then it fails at that row\'s position', async () => {
    const file = newFile();
    const store = open(file);
    for (let n = 0; n < 5; n += 1) await store.append(`s-${n}`, someEvents(2), 'any');
    const target = (await wholeChain(store))[6] as RawEnvelope;
    const db = new Database(file);
    // Rows live in the compact `log` (their data packed as the writer packs it).
    db.prepare('UPDATE log SET data = ? WHERE position = ?').run(packJson({ n: 'forged' }, 0), target.position);
    db.close();
    expect(verified(await wholeChain(store)).failure?.position).to.equal(target.position);
  });

  it('given a file written before the chain, when opened and appended to, then old rows stay unhashed and untouched, and the first hashed row follows the anchor of the last old one', async () => {
    const file = newFile();
    legacyFile(file, 5);
    const store = open(file);
    await store.append('new', someEvents(3), 'no_stream');
    const events = await wholeChain(store, 2);
    expect(events.map((event) => event.hash === null)).to.deep.equal([true, true, true, true, true, false, false, false]);
    expect(events.slice(0, 5).map((event) => event.data)).to.deep.equal([0, 1, 2, 3, 4].map((n) => ({ n })));
    expect(events[5]?.prev_hash).to.equal(chainAnchor(5));
    const state = verified(events);
    expect(state.failure).to.equal(null);
    expect({ legacy: state.legacy, hashed: state.hashed }).to.deep.equal({ legacy: 5, hashed: 3 });
  });

  it('given the last row removed by hand, when the store that wrote it appends again, then the new row follows the removed one and the verifier fails there', async () => {
    const file = newFile();
    const store = open(file, 'main-thread');
    await store.append('s', someEvents(4), 'any');
    const db = new Database(file);
    db.exec('DELETE FROM log WHERE position = 4');
    db.close();
    const { position } = await store.append('t', someEvents(1), 'any');
    // AUTOINCREMENT: position 4 is never handed out again.
    expect(position).to.equal(5n);
    expect(verified(await wholeChain(store)).failure?.position).to.equal(5);
  });
});
