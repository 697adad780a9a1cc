import { expect } from 'chai';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { catalogClient, type CatalogClient } from '../../test/support/catalogFixture.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { openSqliteEventStore } from '../event-store/sqlite/SqliteEventStore.ts';
import { metadataFor } from '../../shared/events.ts';
import { readModelVersion, snapshotFolder, writeSnapshot } from './snapshotFile.ts';

/** The payload items under `folder`, by laui, as the catalog lists them. */
const childrenOf = async (api: CatalogClient, folder: string): Promise<Map<string, Record<string, unknown>>> => {
  const reply = await api.get({ item_laui: folder, parent_or_child: 'child', per_page: 1000 });
  expect(reply.status, reply.text).to.equal(200);
  const items = (reply.json as { items: Array<Record<string, unknown>> }).items;
  const found = new Map(items.map((item) => [String(item.laui), item]));
  expect(found.size, 'no item listed twice').to.equal(items.length);
  return found;
};

const snapshotsIn = (dataDir: string): string[] => {
  try {
    return readdirSync(snapshotFolder(dataDir)).filter((name) => name.endsWith('.snap'));
  } catch {
    return [];
  }
};

const waitFor = async (what: string, done: () => boolean, timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('read-model snapshots: restarts replay only what follows the newest snapshot (embedded service)', function () {
  this.timeout(240_000);
  const env = { SNAPSHOT_INTERVAL_EVENTS: '40' };
  let dataDir = '';
  let folder = '';
  let served = new Map<string, Record<string, unknown>>();
  let midLoadSnapshot = '';

  before(async () => {
    // A service under a write load of three writers, snapshotting every 40 events meanwhile.
    const svc = await startTestService(env);
    dataDir = svc.dataDir;
    const admin = catalogClient(svc, (await svc.login()).token);
    folder = (await admin.bootstrap('snap-co')).folders.payload;
    let n = 0;
    const writer = async () => {
      for (let i = 0; i < 80; i += 1) {
        const reply = await admin.create({ item_type: 'payload', name: `p-${n++}`, parent_laui: folder, content: { n } });
        expect(reply.status, reply.text).to.equal(200);
      }
    };
    const writers = Promise.all([writer(), writer(), writer()]);
    // A snapshot taken while they write: kept aside, to restart from it below.
    await waitFor('the load under way', () => n > 40);
    await svc.service.snapshots?.take();
    expect(n, 'taken while the writers still wrote').to.be.below(240);
    const [taken] = snapshotsIn(dataDir);
    midLoadSnapshot = join(dataDir, `mid-load-${String(taken)}`);
    copyFileSync(join(snapshotFolder(dataDir), String(taken)), midLoadSnapshot);
    await writers;
    served = await childrenOf(admin, folder);
    expect(served.size).to.equal(240);
    await svc.stop({ keepData: true });
  });

  after(() => rmSync(dataDir, { recursive: true, force: true }));

  const restart = async (check: (svc: TestService, admin: CatalogClient) => Promise<void>): Promise<string[]> => {
    const svc = await startTestService(env, {}, dataDir);
    try {
      await check(svc, catalogClient(svc, (await svc.login()).token));
      return [...svc.announced];
    } finally {
      await svc.stop({ keepData: true });
    }
  };

  it('given a graceful stop, when restarted, then the start loads the stop\'s snapshot and serves every item as before', async () => {
    expect(snapshotsIn(dataDir)).to.have.length(1);
    const announced = await restart(async (_svc, admin) => {
      expect(await childrenOf(admin, folder)).to.deep.equal(served);
    });
    expect(announced.join('\n')).to.match(/Read models loaded from the snapshot at position \d+/);
    expect(announced.join('\n')).to.not.match(/Rebuilding read models/);
  });

  it('given events appended after the snapshot (another writer of the log), when restarted, then they are replayed on top of it', async () => {
    const store = openSqliteEventStore({ file: join(dataDir, 'events.sqlite'), synchronous: 'normal', writer: 'main-thread', pollIntervalMs: 200 });
    const [laui, item] = [...served][0] as [string, Record<string, unknown>];
    await store.append(`item-${laui}`, [{ type: 'ItemUpdated', data: { changes: { content: { n: -1, after: 'snapshot' } }, version: Number(item?.version) + 1, revision_laui: '6a0000000000000000000001' }, metadata: metadataFor(null, new Date(), 'after-snapshot') }], 'any');
    await store.close();
    await restart(async (_svc, admin) => {
      const now = await childrenOf(admin, folder);
      expect(now.get(String(laui))?.content).to.deep.equal({ n: -1, after: 'snapshot' });
      expect(now.size).to.equal(served.size);
    });
  });

  it('given the snapshot taken during the write load, when restarted from it, then the events after it are replayed once: every item, none twice', async () => {
    const folderOfSnapshots = snapshotFolder(dataDir);
    for (const name of snapshotsIn(dataDir)) rmSync(join(folderOfSnapshots, name));
    copyFileSync(midLoadSnapshot, join(folderOfSnapshots, midLoadSnapshot.split('mid-load-')[1] as string));
    const announced = await restart(async (_svc, admin) => {
      const now = await childrenOf(admin, folder);
      expect([...now.keys()].sort()).to.deep.equal([...served.keys()].sort());
    });
    expect(announced.join('\n')).to.match(/Read models loaded from the snapshot/);
  });

  it('given a damaged snapshot (one byte flipped), when restarted, then it is not used, the log is replayed and the same items are served', async () => {
    const [name] = snapshotsIn(dataDir);
    const file = join(snapshotFolder(dataDir), String(name));
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.length / 2)] = (bytes[Math.floor(bytes.length / 2)] ?? 0) ^ 0xff;
    writeFileSync(file, bytes);
    const announced = await restart(async (_svc, admin) => {
      expect((await childrenOf(admin, folder)).size).to.equal(served.size);
    });
    // Found at the byte that does not decode, or at the digest: either way nothing of it is served.
    expect(announced.join('\n')).to.match(/snapshot .* not used \(/);
  });

  describe('given a snapshot that does not belong to this log and code, when restarted, then it is not used, the start says why and serves every item from the log', () => {
    // Each claims no item at all: had it been used, the folder would be listed empty.
    const wrongSnapshots: Array<[string, (dir: string) => Promise<void>, RegExp]> = [
      ['made by other read-model code', async (dir) => {
        await writeSnapshot({ dir, version: `not-${await readModelVersion()}`, runner: 'embedded', position: 10n, eventId: await eventIdAt(10n), collections: new Map() });
      }, /not used \(made by other read-model code/],
      ['of the older file format', async (dir) => {
        await writeSnapshot({ dir, version: await readModelVersion(), runner: 'embedded', position: 10n, eventId: await eventIdAt(10n), collections: new Map() });
        // Format 3's header as it was: the same frame with format 3 (the reader stops at the header, before the CRC).
        const [name] = readdirSync(dir).filter((entry) => entry.endsWith('.snap'));
        const file = join(dir, String(name));
        writeFileSync(file, Buffer.from(readFileSync(file).toString('latin1').replace('"format":4', '"format":3'), 'latin1'));
      }, /not used \(format 3, this version reads 4/],
      ['past the log\'s end', async (dir) => {
        await writeSnapshot({ dir, version: await readModelVersion(), runner: 'embedded', position: 10n ** 9n, eventId: 'x', collections: new Map() });
      }, /not used \(its position 1000000000 is past the log's end/],
      ['of another log put back in its place (another event at its position)', async (dir) => {
        await writeSnapshot({ dir, version: await readModelVersion(), runner: 'embedded', position: 10n, eventId: 'an-event-of-another-log', collections: new Map() });
      }, /not used \(the log's event at its position 10 is not the one it covers/],
    ];
    const eventIdAt = async (position: bigint): Promise<string> => {
      const store = openSqliteEventStore({ file: join(dataDir, 'events.sqlite'), synchronous: 'normal', writer: 'main-thread', pollIntervalMs: 200 });
      try {
        const [event] = await store.readAll({ after: position - 1n, maxCount: 1 });
        return String(event?.id);
      } finally {
        await store.close();
      }
    };

    for (const [what, write, reason] of wrongSnapshots) {
      it(`${what}`, async () => {
        const folderOfSnapshots = snapshotFolder(dataDir);
        for (const name of snapshotsIn(dataDir)) rmSync(join(folderOfSnapshots, name));
        mkdirSync(folderOfSnapshots, { recursive: true });
        await write(folderOfSnapshots);
        const announced = await restart(async (_svc, admin) => {
          expect((await childrenOf(admin, folder)).size).to.equal(served.size);
        });
        expect(announced.join('\n')).to.match(reason);
        expect(announced.join('\n')).to.not.match(/Read models loaded from the snapshot/);
      });
    }
  });
});
