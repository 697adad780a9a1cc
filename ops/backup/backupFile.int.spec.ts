import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { gunzipSync, gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { openEventStoreDatabase } from '../event-store/sqlite/openEventStoreDatabase.ts';
import { backupDataDir, type BackupProgress } from './backupDataDir.ts';
import type { BackupManifest } from './backupManifest.ts';
import { restoreDataDir, type RestoreProgress } from './restoreDataDir.ts';

/** A DATA_DIR as a service leaves it: a log of `events` events, keys, the publisher's checkpoint, a snapshot, logs. */
const makeDataDir = (dir: string, events: number): void => {
  mkdirSync(join(dir, 'keys'), { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'keys', 'encryption.key'), 'ab'.repeat(32), { mode: 0o600 });
  writeFileSync(join(dir, 'keys', 'jwt-private.pem'), '-----BEGIN PRIVATE KEY-----\n', { mode: 0o600 });
  const db = openEventStoreDatabase(join(dir, 'events.sqlite'), 'normal');
  const insert = db.prepare('INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  for (let n = 0; n < events; n += 1) insert.run(`item-${n}`, 0, `id-${n}`, 'ItemCreated', JSON.stringify({ n, text: 'x'.repeat(100) }), '{}', new Date(0).toISOString());
  db.close();
  // Ahead of the log: the service published (and snapshotted) past what the log copy will hold.
  writeFileSync(join(dir, 'domain-events.checkpoint'), `${events + 50}\n`, { mode: 0o600 });
  mkdirSync(join(dir, 'snapshots'), { mode: 0o700 });
  writeFileSync(join(dir, 'snapshots', `readmodels-${String(events + 50).padStart(20, '0')}.snap`), 'ORCHSNAP...');
  writeFileSync(join(dir, 'domain-events.checkpoint.tmp'), '99');
  mkdirSync(join(dir, 'logs', 'API'), { recursive: true });
  writeFileSync(join(dir, 'logs', 'API', 'today.jsonl'), '{"message":"hello"}\n');
};

type Entries = Array<{ name: string; body: Buffer }>;

const unpack = async (file: string): Promise<Entries> => {
  const entries: Entries = [];
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    void buffer(stream).then((body) => {
      entries.push({ name: header.name, body });
      next();
    }, next);
  });
  Readable.from(gunzipSync(readFileSync(file))).pipe(extract);
  await new Promise<void>((resolve, reject) => extract.on('finish', () => resolve()).on('error', reject));
  return entries;
};

const pack = async (entries: Entries): Promise<Buffer> => {
  const packer = tar.pack();
  for (const entry of entries) packer.entry({ name: entry.name, size: entry.body.length }, entry.body);
  packer.finalize();
  return gzipSync(await buffer(packer));
};

const sha256 = (body: Buffer): string => createHash('sha256').update(body).digest('hex');

const failure = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  return expect.fail('expected it to be refused');
};

describe('backup files (backupDataDir, restoreDataDir)', () => {
  const base = mkdtempSync(join(tmpdir(), 'backup-file-'));
  const dataDir = join(base, 'data');
  const backup = join(base, 'data.backup');
  let manifest: BackupManifest;
  const progress: BackupProgress[] = [];

  before(async () => {
    makeDataDir(dataDir, 2_000);
    // A umask that would leave a file made with the default mode readable by all: 0600 must come from the open.
    const umask = process.umask(0);
    try {
      manifest = await backupDataDir({ dataDir, out: backup, serviceVersion: '0.1.0', onProgress: (step) => progress.push(step) });
    } finally {
      process.umask(umask);
    }
  });

  after(() => rmSync(base, { recursive: true, force: true }));

  it('given a DATA_DIR, when backed up, then the file is 0600 and holds the log, the keys and the checkpoint held back to the head, not the snapshots, files being written or logs', async () => {
    expect(statSync(backup).mode & 0o777).to.equal(0o600);
    expect(manifest.log_head_position).to.equal(2_000);
    expect(manifest.files.map((file) => file.path).sort()).to.deep.equal(['domain-events.checkpoint', 'events.sqlite', 'keys/encryption.key', 'keys/jwt-private.pem']);
    const entries = await unpack(backup);
    expect(entries.map((entry) => entry.name)[0]).to.equal('manifest.json');
    expect(entries.find((entry) => entry.name === 'data/domain-events.checkpoint')?.body.toString()).to.equal('2000\n');
    for (const file of manifest.files) expect(sha256(entries.find((entry) => entry.name === `data/${file.path}`)?.body ?? Buffer.alloc(0)), file.path).to.equal(file.sha256);
    // Nothing of the work folder is left beside the file.
    expect(readdirSync(base).sort()).to.deep.equal(['data', 'data.backup']);
  });

  it('given a backup, when it ran, then its progress went through the log pages and the packed bytes to their totals', () => {
    const last = (phase: BackupProgress['phase']) => progress.filter((step) => step.phase === phase).at(-1);
    expect(last('log')).to.include({ done: last('log')?.total });
    expect(last('pack')?.done).to.equal(manifest.files.reduce((sum, file) => sum + file.size, 0));
  });

  it('given --with-logs, when backed up, then the logs are in it', async () => {
    const out = join(base, 'with-logs.backup');
    const withLogs = await backupDataDir({ dataDir, out, withLogs: true, serviceVersion: '0.1.0' });
    expect(withLogs.files.map((file) => file.path)).to.include('logs/API/today.jsonl');
    rmSync(out);
  });

  it('given an existing file, when backed up without force, then it is refused and the file kept; with force it is replaced', async () => {
    const out = join(base, 'taken.backup');
    writeFileSync(out, 'older');
    expect(await failure(backupDataDir({ dataDir, out, serviceVersion: '0.1.0' }))).to.match(/exists: give --force/);
    expect(readFileSync(out, 'utf8')).to.equal('older');
    await backupDataDir({ dataDir, out, force: true, serviceVersion: '0.1.0' });
    expect((await unpack(out))[0]?.name).to.equal('manifest.json');
    rmSync(out);
  });

  it('given --out inside DATA_DIR or in a folder that does not exist, when backed up, then it is refused saying why and nothing is left', async () => {
    expect(await failure(backupDataDir({ dataDir, out: join(dataDir, 'keys', 'b.backup'), serviceVersion: '0.1.0' }))).to.match(/is inside DATA_DIR/);
    expect(await failure(backupDataDir({ dataDir, out: join(base, 'nowhere', 'b.backup'), serviceVersion: '0.1.0' }))).to.match(/nowhere does not exist/);
    expect(readdirSync(join(dataDir, 'keys')).sort()).to.deep.equal(['encryption.key', 'jwt-private.pem']);
  });

  it('given an absent DATA_DIR, when restored, then it holds the same files with the service modes and the checkpoint held back', async () => {
    const target = join(base, 'restored');
    const steps: RestoreProgress[] = [];
    await restoreDataDir({ from: backup, dataDir: target, onProgress: (step) => steps.push(step) });
    expect(statSync(target).mode & 0o777).to.equal(0o700);
    expect(statSync(join(target, 'keys')).mode & 0o777).to.equal(0o700);
    for (const file of manifest.files) {
      expect(sha256(readFileSync(join(target, file.path))), file.path).to.equal(file.sha256);
      expect(statSync(join(target, file.path)).mode & 0o777, file.path).to.equal(0o600);
    }
    expect(readFileSync(join(target, 'keys', 'encryption.key'), 'utf8')).to.equal('ab'.repeat(32));
    expect(readFileSync(join(target, 'domain-events.checkpoint'), 'utf8')).to.equal('2000\n');
    expect(steps.at(-1)).to.deep.equal({ done: statSync(backup).size, total: statSync(backup).size });
    expect(readdirSync(base).filter((name) => name.includes('restore-'))).to.deep.equal([]);
  });

  it('given an existing empty DATA_DIR (a mounted volume), when restored, then it is filled in place: the same folder, nothing of the work folder left', async () => {
    const target = mkdtempSync(join(base, 'volume-'));
    const inode = statSync(target).ino;
    await restoreDataDir({ from: backup, dataDir: target });
    expect(statSync(target).ino).to.equal(inode);
    expect(statSync(target).mode & 0o777).to.equal(0o700);
    expect(readdirSync(target).sort()).to.deep.equal(['domain-events.checkpoint', 'events.sqlite', 'keys']);
  });

  it('given a DATA_DIR that is not empty, when restored into, then it is refused and left as it was', async () => {
    const target = mkdtempSync(join(base, 'busy-'));
    writeFileSync(join(target, 'notes.txt'), 'mine');
    expect(await failure(restoreDataDir({ from: backup, dataDir: target }))).to.match(/is not empty \(notes\.txt\)/);
    expect(readdirSync(target)).to.deep.equal(['notes.txt']);
  });

  describe('a damaged or foreign backup is refused and nothing is written', () => {
    const refused = async (name: string, bytes: Buffer, why: RegExp) => {
      const file = join(base, `${name}.backup`);
      writeFileSync(file, bytes);
      const target = join(base, `from-${name}`);
      expect(await failure(restoreDataDir({ from: file, dataDir: target }))).to.match(why);
      expect(() => statSync(target), 'nothing restored').to.throw(/ENOENT/);
      expect(readdirSync(base).filter((entry) => entry.includes('restore-')), 'no work folder left').to.deep.equal([]);
    };
    const edited = async (edit: (entries: Entries) => Entries) => pack(edit(await unpack(backup)));
    const manifestOf = (entries: Entries) => JSON.parse(entries[0]?.body.toString() ?? '{}') as BackupManifest;
    const withManifest = (entries: Entries, changed: BackupManifest): Entries => [{ name: 'manifest.json', body: Buffer.from(JSON.stringify(changed)) }, ...entries.slice(1)];

    it('given a file whose content no longer matches its checksum (a well-formed archive), when restored, then it is refused naming the file', async () => {
      const bytes = await edited((entries) => entries.map((entry) => (entry.name === 'data/keys/encryption.key' ? { ...entry, body: Buffer.from('cd'.repeat(32)) } : entry)));
      await refused('tampered', bytes, /keys\/encryption\.key does not match its checksum/);
    });

    it('given a flipped byte in the compressed file, when restored, then it is refused as damaged', async () => {
      const bytes = Buffer.from(readFileSync(backup));
      const middle = Math.floor(bytes.length / 2);
      bytes[middle] = (bytes[middle] ?? 0) ^ 0xff;
      await refused('flipped', bytes, /damaged backup/);
    });

    it('given a cut file, when restored, then it is refused as damaged', async () => {
      const bytes = readFileSync(backup);
      await refused('cut', bytes.subarray(0, Math.floor(bytes.length * 0.7)), /damaged backup/);
    });

    it('given an unknown format version, when restored, then it is refused saying which version it reads', async () => {
      const bytes = await edited((entries) => withManifest(entries, { ...manifestOf(entries), version: 99 }));
      await refused('future', bytes, /format version 99, which this version of the service does not read \(it reads 1\)/);
    });

    it('given a file the manifest does not list, or one it lists that is missing, when restored, then it is refused', async () => {
      await refused('extra', await edited((entries) => [...entries, { name: 'data/keys/planted.pem', body: Buffer.from('x') }]), /data\/keys\/planted\.pem is not in its manifest/);
      await refused('missing', await edited((entries) => entries.filter((entry) => entry.name !== 'data/keys/jwt-private.pem')), /keys\/jwt-private\.pem is missing/);
    });

    it('given a manifest whose log head is not the log it comes with, when restored, then it is refused', async () => {
      const bytes = await edited((entries) => withManifest(entries, { ...manifestOf(entries), log_head_position: 1_999 }));
      await refused('head', bytes, /event log ends at position 2000, its manifest says 1999/);
    });

    it('given a file that is no backup at all, when restored, then it is refused', async () => {
      await refused('foreign', gzipSync(Buffer.from('hello')), /damaged backup|not a backup/);
      await refused('plain', Buffer.from('not even gzip'), /damaged backup/);
    });
  });
});
