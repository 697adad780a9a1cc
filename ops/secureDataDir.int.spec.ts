import { expect } from 'chai';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secureDataDir } from './secureDataDir.ts';
import { startTestService } from '../test/support/testService.ts';

const mode = (path: string) => statSync(path).mode & 0o777;

describe('DATA_DIR permissions', function () {
  this.timeout(60_000);

  it('given an existing DATA_DIR readable by everyone (an older version made it 0755), when secured, then it is 0700, keys 0700, key files and the event log 0600', () => {
    const root = mkdtempSync(join(tmpdir(), 'datadir-spec-'));
    try {
      const dir = join(root, 'data');
      mkdirSync(join(dir, 'keys'), { recursive: true });
      for (const file of ['keys/jwt-private.pem', 'keys/jwt-public.pem', 'events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm']) writeFileSync(join(dir, file), 'x', { mode: 0o644 });
      chmodSync(dir, 0o755);
      chmodSync(join(dir, 'keys'), 0o755);
      secureDataDir(dir);
      expect([mode(dir), mode(join(dir, 'keys'))]).to.deep.equal([0o700, 0o700]);
      for (const file of ['keys/jwt-private.pem', 'keys/jwt-public.pem', 'events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm']) expect(mode(join(dir, file)), file).to.equal(0o600);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('given a fresh DATA_DIR, when the service has started, then DATA_DIR is 0700 and the keys and the event log files are 0600', async () => {
    const svc = await startTestService();
    try {
      expect(mode(svc.dataDir)).to.equal(0o700);
      expect(mode(join(svc.dataDir, 'keys'))).to.equal(0o700);
      for (const file of ['keys/jwt-private.pem', 'events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm']) expect(mode(join(svc.dataDir, file)), file).to.equal(0o600);
    } finally {
      await svc.stop();
    }
  });
});
