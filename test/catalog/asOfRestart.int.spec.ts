import { expect } from 'chai';
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { foldCheckpointsFile } from '../../ops/snapshots/SqliteFoldCheckpoints.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient } from '../support/catalogFixture.ts';

type Entry = { event: string; at: string };

/** Snapshot rows kept for an item's stream in DATA_DIR (0 while the file does not exist yet). */
const keptRows = (dataDir: string, laui: string): number => {
  const file = foldCheckpointsFile(dataDir);
  if (!existsSync(file)) return 0;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM fold_checkpoints WHERE stream = ?').get(`item-${laui}`) as { n: number }).n;
  } finally {
    db.close();
  }
};

describe('as_of fold snapshots kept in DATA_DIR across a restart (issue 36)', () => {
  let svc: TestService | null = null;
  after(async () => svc?.stop());

  it('given an item changed 250 times, when the service restarts, then its snapshots were kept as it grew (no read) and as_of reads answer the same from them', async () => {
    // Given: 250 changes and no as_of read at all.
    svc = await startTestService();
    const admin = catalogClient(svc, (await svc.login()).token);
    const tree = await admin.bootstrap('keepers');
    const laui = await admin.createOk({ item_type: 'payload', name: 'busy', parent_laui: tree.folders.payload, content: { n: 0 } });
    for (let n = 1; n <= 250; n += 1) {
      const reply = await admin.post('/update', { item_laui: laui, content: { n } });
      expect(reply.status, reply.text).to.equal(200);
    }
    // Then: the stream's 251 events were folded in the background every 100 events.
    for (let waited = 0; keptRows(svc.dataDir, laui) < 2; waited += 50) {
      if (waited > 30_000) expect.fail('no fold snapshots kept after 30 s');
      await sleep(50);
    }
    expect(keptRows(svc.dataDir, laui)).to.equal(2);
    const history = (await admin.getPath(`/get/item_history?item_laui=${laui}`)).json as Entry[];
    const instants = [1, 98, 99, 100, 150, 199, 200, 249].map((index) => history[index]?.at as string);
    const before = await Promise.all(instants.map(async (as_of) => (await admin.get({ item_laui: laui, as_of })).json));
    expect((before[4] as { content: unknown }).content).to.deep.equal({ n: 150 });

    // When
    const dataDir = svc.dataDir;
    await svc.stop({ keepData: true });
    svc = await startTestService({}, {}, dataDir);
    const again = catalogClient(svc, (await svc.login()).token);

    // Then
    const after = await Promise.all(instants.map(async (as_of) => (await again.get({ item_laui: laui, as_of })).json));
    expect(after).to.deep.equal(before);
    expect(keptRows(dataDir, laui)).to.equal(2);
  });
});
