import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generateKeyPairSync } from 'node:crypto';
import Database from 'better-sqlite3';
import { metadataFor } from '../../shared/events.ts';
import { copyReleaseData } from '../../test/fixtures/copyReleaseData.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { waitUntil } from '../../test/support/waitUntil.ts';
import { packJson } from '../event-store/sqlite/packedJson.ts';

const run = promisify(execFile);

const cli = (dataDir: string, ...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'ops/cli.ts', ...args], { env: { ...process.env, DATA_DIR: dataDir }, cwd: process.cwd() });

/** The CLI's exit code, stdout and stderr, whether it succeeded or not. */
const outcome = async (dataDir: string, ...args: string[]): Promise<{ code: number; verdict: Record<string, unknown>; stderr: string }> => {
  try {
    const { stdout, stderr } = await cli(dataDir, ...args);
    return { code: 0, verdict: JSON.parse(stdout) as Record<string, unknown>, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, verdict: failed.stdout.trim() === '' ? {} : (JSON.parse(failed.stdout) as Record<string, unknown>), stderr: failed.stderr };
  }
};

interface CheckpointsAnswer {
  public_key: string;
  public_key_sha256: string;
  checkpoints: Array<{ position: number; hash: string; signed_at: string; signature: string }>;
}

describe('events verify: the hash chain checked in DATA_DIR, through a running service and in an export offline', () => {
  let svc: TestService;
  let admin: string;
  let url: string;

  before(async () => {
    svc = await startTestService({ EVENTS_CHECKPOINT_EVERY: '5' });
    admin = (await svc.login()).token;
    url = svc.client().baseUrl;
    await svc.service.eventStore.append(
      'probe-chain',
      Array.from({ length: 30 }, (_, index) => ({ type: 'ChainProbed', data: { index, password: 'probe-secret-1' }, metadata: metadataFor(null, new Date(), 'probe') })),
      'any',
    );
    const head = Number(await svc.service.eventStore.headPosition());
    await waitUntil(async () => {
      const answer = (await svc.client().get('/api/v1/events/checkpoints', { token: admin })).json as CheckpointsAnswer;
      return (answer.checkpoints.at(-1)?.position ?? 0) > head - 5;
    }, 'checkpoints up to the head');
  });
  after(async () => svc.stop());

  it('given the log of a running service, when verified in DATA_DIR and through its URL by an administrator, then both hold, its checkpoints matched', async () => {
    const local = await outcome(svc.dataDir, 'events', 'verify');
    expect(local.code, local.stderr).to.equal(0);
    expect(local.verdict).to.include({ ok: true, before_chain: 0 });
    expect(local.verdict.hashed).to.be.greaterThan(30);
    expect(local.verdict.checkpoints).to.be.greaterThan(5);
    const remote = await outcome(svc.dataDir, 'events', 'verify', '--url', url, '--token', admin);
    expect(remote.code, remote.stderr).to.equal(0);
    expect(remote.verdict).to.include({ ok: true });
    expect(remote.verdict.hashed).to.be.at.least(local.verdict.hashed as number);
  });

  it('given a raw export, the checkpoints and the public key, when verified offline, then it holds; a forged signature or another key fails naming the checkpoint', async () => {
    const out = join(svc.dataDir, 'raw.jsonl');
    const exported = await outcome(svc.dataDir, 'events', 'export', '--raw', '--out', out);
    expect(exported.code, exported.stderr).to.equal(0);
    const first = JSON.parse(readFileSync(out, 'utf8').split('\n')[0] as string) as Record<string, unknown>;
    expect(first).to.have.keys('position', 'stream', 'revision', 'type', 'version', 'data', 'metadata', 'hash', 'prev_hash');
    const checkpointsFile = join(svc.dataDir, 'checkpoints.json');
    await cli(svc.dataDir, 'events', 'checkpoints', '--out', checkpointsFile);
    const checkpoints = JSON.parse(readFileSync(checkpointsFile, 'utf8')) as CheckpointsAnswer;
    const served = (await svc.client().get('/api/v1/events/checkpoints', { token: admin })).json as CheckpointsAnswer;
    expect(checkpoints.public_key_sha256).to.equal(served.public_key_sha256);
    const keyFile = join(svc.dataDir, 'published.pem');
    writeFileSync(keyFile, served.public_key);

    const offline = await outcome(svc.dataDir, 'events', 'verify', '--file', out, '--checkpoints', checkpointsFile, '--public-key', keyFile);
    expect(offline.code, offline.stderr).to.equal(0);
    expect(offline.verdict).to.include({ ok: true, checkpoints: checkpoints.checkpoints.filter((checkpoint) => checkpoint.position <= Number(exported.verdict.last_position)).length });

    const victim = checkpoints.checkpoints[1] as CheckpointsAnswer['checkpoints'][number];
    const forgedFile = join(svc.dataDir, 'forged.json');
    writeFileSync(forgedFile, JSON.stringify({ ...checkpoints, checkpoints: checkpoints.checkpoints.map((checkpoint) => (checkpoint === victim ? { ...checkpoint, hash: 'ab'.repeat(32) } : checkpoint)) }));
    const forged = await outcome(svc.dataDir, 'events', 'verify', '--file', out, '--checkpoints', forgedFile, '--public-key', keyFile);
    expect(forged.code).to.equal(1);
    expect(forged.verdict).to.include({ ok: false, position: victim.position });
    expect(forged.stderr).to.include(`position ${victim.position}`);

    const otherKey = join(svc.dataDir, 'other.pem');
    writeFileSync(otherKey, generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const wrongKey = await outcome(svc.dataDir, 'events', 'verify', '--file', out, '--checkpoints', checkpointsFile, '--public-key', otherKey);
    expect(wrongKey.verdict).to.include({ ok: false, position: checkpoints.checkpoints[0]?.position });
  });

  it('given an auditor, when reading the raw chain, then 403: only administrators read the unredacted log; the checkpoints they may read', async () => {
    const created = await svc.client().post('/api/v1/user/create', {
      json: { username: 'chain-auditor', email: 'chain-auditor@example.com', password: 'password-123', must_change_password: false, is_auditor: true },
      token: admin,
    });
    expect(created.status, created.text).to.equal(200);
    const auditor = (await svc.login('chain-auditor', 'password-123')).token;
    const refused = await svc.client().get('/api/v1/events/chain', { token: auditor });
    expect([refused.status, refused.json]).to.deep.equal([403, { detail: 'Access denied: administrators only' }]);
    expect((await svc.client().get('/api/v1/events/checkpoints', { token: auditor })).status).to.equal(200);
    const page = (await svc.client().get('/api/v1/events?limit=5', { token: auditor })).json as { events: Array<{ hash: string; prev_hash: string }> };
    for (const [index, event] of page.events.entries()) if (index > 0) expect(event.prev_hash).to.equal(page.events[index - 1]?.hash);
  });

  it('given a row of events.sqlite changed by hand, when verified in DATA_DIR and through the URL, then both exit 1 naming its position', async () => {
    const db = new Database(join(svc.dataDir, 'events.sqlite'));
    // Rows live in the compact `log` (their data packed as the writer packs it).
    const position = Number(db.prepare("SELECT l.position FROM log l JOIN log_streams s ON s.id = l.stream WHERE s.name = 'probe-chain' AND l.revision = 7").pluck().get());
    db.prepare('UPDATE log SET data = ? WHERE position = ?').run(packJson({ index: 7, password: 'rewritten' }, 0), position);
    db.close();
    const local = await outcome(svc.dataDir, 'events', 'verify');
    expect(local.code).to.equal(1);
    expect(local.verdict).to.include({ ok: false, position });
    expect(local.stderr).to.include(`breaks at position ${position}`);
    const remote = await outcome(svc.dataDir, 'events', 'verify', '--url', url, '--token', admin);
    expect(remote.verdict).to.include({ ok: false, position });
  });

  it('given the release data (written before the chain), when verified, appended to and verified again, then its events count as before the chain and the new ones follow its anchor', async () => {
    const dataDir = copyReleaseData();
    const before = await outcome(dataDir, 'events', 'verify');
    expect(before.code, before.stderr).to.equal(0);
    expect(before.verdict).to.include({ ok: true, hashed: 0 });
    expect(before.verdict.before_chain).to.be.greaterThan(10);
    await cli(dataDir, 'user', 'create', '--username', 'after-upgrade', '--email', 'after@example.com', '--password', 'password-123');
    const after = await outcome(dataDir, 'events', 'verify');
    expect(after.code, after.stderr).to.equal(0);
    expect(after.verdict).to.include({ ok: true, before_chain: before.verdict.before_chain });
    expect(after.verdict.hashed).to.be.greaterThan(0);
  });
});
