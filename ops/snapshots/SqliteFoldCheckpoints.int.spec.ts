import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FoldCheckpoint } from '../../query-side/catalog/FoldCheckpoints.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { foldCheckpointsFile, SqliteFoldCheckpoints } from './SqliteFoldCheckpoints.ts';

const STREAM = 'item-65a0000000000000000000d1';
const doc = (n: number) => ({ id: 'x', laui: 'x', item_type: 'payload', name: 'p', content: { n, nested: [1, 'two', null] } }) as unknown as ItemDoc;
const checkpoint = (revision: number): FoldCheckpoint => ({ revision, maxAt: `2026-01-01T00:00:${String(revision % 60).padStart(2, '0')}.000Z`, doc: doc(revision), hardDeleted: false });

describe('SqliteFoldCheckpoints: the as-of fold snapshots kept in DATA_DIR (issue 36)', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'fold-checkpoints-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
  const open = (origin: string | null) => new SqliteFoldCheckpoints({ file: foldCheckpointsFile(dataDir), origin: () => Promise.resolve(origin) });

  it('given a service that never reads or keeps a snapshot, when it opens and closes the store, then no file is made', () => {
    open('o').close();
    expect(existsSync(foldCheckpointsFile(dataDir))).to.equal(false);
  });

  it('given snapshots saved by one process, when another opens the file with the same origin, then it loads them in order, documents intact, and a second save of one changes nothing', async () => {
    // Given
    const first = open('code-1 event-1');
    await first.save(STREAM, [checkpoint(99), { ...checkpoint(199), doc: null, hardDeleted: true }]);
    await first.save(STREAM, [checkpoint(99)]);
    first.close();
    // When
    const second = open('code-1 event-1');
    const loaded = await second.load(STREAM);
    second.close();
    // Then
    expect(loaded).to.deep.equal([checkpoint(99), { ...checkpoint(199), doc: null, hardDeleted: true }]);
    expect(statSync(foldCheckpointsFile(dataDir)).mode & 0o777).to.equal(0o600);
  });

  it('given snapshots of another origin (other read-model code or another log), when opened, then none is loaded', async () => {
    const first = open('code-1 event-1');
    await first.save(STREAM, [checkpoint(99)]);
    first.close();
    for (const origin of ['code-2 event-1', 'code-1 event-9']) {
      const other = open(origin);
      expect(await other.load(STREAM), origin).to.deep.equal([]);
      other.close();
    }
  });

  it('given a file that is not a database (damaged), when opened, then it starts anew and keeps snapshots again', async () => {
    const file = foldCheckpointsFile(dataDir);
    const first = open('o');
    await first.save(STREAM, [checkpoint(4)]);
    first.close();
    writeFileSync(file, 'this is not SQLite '.repeat(500));
    rmSync(`${file}-wal`, { force: true });
    const reopened = open('o');
    expect(await reopened.load(STREAM)).to.deep.equal([]);
    await reopened.save(STREAM, [checkpoint(9)]);
    expect(await reopened.load(STREAM)).to.deep.equal([checkpoint(9)]);
    reopened.close();
  });
});
