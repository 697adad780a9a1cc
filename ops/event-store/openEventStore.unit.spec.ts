import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { openKurrentEventStore } from './kurrentdb/KurrentEventStore.ts';
import { openEventStore } from './openEventStore.ts';

/** The message a promise rejects with. */
const rejection = async (opening: Promise<{ close(): Promise<void> }>): Promise<string> => {
  try {
    await (await opening).close();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  return expect.fail('expected the store not to open');
};

// openEventStore imports the KurrentDB adapter only when EVENTSTORE_URL names one (the client is
// slow to load): these go through that dynamic import, no server needed.
describe('openEventStore with a KurrentDB configuration (the adapter imported on demand)', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'open-event-store-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  const openWith = (connectionString: string) => openEventStore({ eventStore: { kind: 'kurrentdb', connectionString }, dataDir, sqliteSynchronous: 'full' });

  it('given a connection string that is not one, when opening, then the same message as the adapter itself, and no SQLite log is made', async () => {
    const connectionString = 'http://admin:s3cret@localhost:2113';
    const message = await rejection(openWith(connectionString));
    expect(message).to.equal(await rejection(openKurrentEventStore({ connectionString })));
    expect(message).to.match(/^Not a KurrentDB connection string/);
    expect(existsSync(join(dataDir, 'events.sqlite'))).to.equal(false);
  });

  it('given nothing listening at the address, when opening, then it fails at the start with what to check', async () => {
    // Port 1 on the loopback: refused at once.
    const message = await rejection(openWith('kurrentdb://admin:s3cret@127.0.0.1:1?tls=false'));
    expect(message).to.match(/^KurrentDB did not answer a first read of \$all .*check the address, port, tls= and credentials/);
    expect(message).to.not.include('s3cret');
  });
});
