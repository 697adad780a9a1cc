import { expect } from 'chai';
import { heldBackCheckpoint, leftOut } from './backupSelection.ts';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, parseManifest } from './backupManifest.ts';

describe('what a backup holds (backupSelection)', () => {
  const defaults = { withLogs: false, logs: 'logs' };

  it('given the files of a DATA_DIR, when selected, then the keys and the checkpoint go in and the log files, snapshots, files being written and logs stay out', () => {
    const kept = ['keys/encryption.key', 'keys/jwt-private.pem', 'domain-events.checkpoint', 'settings.json'].filter((path) => leftOut(path, defaults) === null);
    expect(kept).to.deep.equal(['keys/encryption.key', 'keys/jwt-private.pem', 'domain-events.checkpoint', 'settings.json']);
    for (const path of ['events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm', 'snapshots/readmodels-00000000000000000042.snap', 'snapshots', 'domain-events.checkpoint.tmp', 'logs/API/2026-11-28.jsonl']) {
      expect(leftOut(path, defaults), path).to.be.a('string');
    }
  });

  it('given --with-logs or a LOG_DIR of another name, when selected, then the logs folder follows the setting and not the name', () => {
    expect(leftOut('logs/API/a.jsonl', { withLogs: true, logs: 'logs' })).to.equal(null);
    expect(leftOut('run-logs/TASK/a.jsonl', { withLogs: false, logs: 'run-logs' })).to.be.a('string');
    // LOG_DIR outside DATA_DIR: a folder named logs in DATA_DIR is just a folder.
    expect(leftOut('logs/a.txt', { withLogs: false, logs: null })).to.equal(null);
    expect(leftOut('logsbook/a.txt', defaults)).to.equal(null);
  });

  it('given a publisher checkpoint past the backup head, when held back, then it is the head; one at or before it is kept as it is', () => {
    expect(heldBackCheckpoint('120\n', 100)).to.equal('100\n');
    expect(heldBackCheckpoint('100\n', 100)).to.equal('100\n');
    expect(heldBackCheckpoint('42\n', 100)).to.equal('42\n');
    expect(heldBackCheckpoint('garbage', 100)).to.equal('garbage');
  });
});

describe('a backup manifest (parseManifest)', () => {
  const manifest = (changes: Record<string, unknown>) =>
    JSON.stringify({
      format: BACKUP_FORMAT,
      version: BACKUP_FORMAT_VERSION,
      service_version: '0.1.0',
      created_at: '2026-11-28T00:00:00.000Z',
      log_head_position: 7,
      files: [{ path: 'events.sqlite', size: 1, sha256: 'a'.repeat(64) }],
      ...changes,
    });

  it('given a well-formed manifest, when parsed, then it is returned', () => {
    expect(parseManifest(manifest({})).log_head_position).to.equal(7);
  });

  it('given an unknown format version, another format, a path leaving DATA_DIR, a repeated path or no log, when parsed, then each is refused with why', () => {
    expect(() => parseManifest(manifest({ version: BACKUP_FORMAT_VERSION + 1 }))).to.throw(/format version 2, which this version of the service does not read/);
    expect(() => parseManifest(manifest({ format: 'tarball' }))).to.throw(/not a backup of this service/);
    expect(() => parseManifest('{')).to.throw(/not JSON/);
    const file = { size: 1, sha256: 'b'.repeat(64) };
    for (const path of ['../outside', '/etc/passwd', 'keys/../../x']) {
      expect(() => parseManifest(manifest({ files: [{ path: 'events.sqlite', ...file }, { path, ...file }] })), path).to.throw(/bad file entry/);
    }
    expect(() => parseManifest(manifest({ files: [{ path: 'events.sqlite', ...file }, { path: 'events.sqlite', ...file }] }))).to.throw(/twice/);
    expect(() => parseManifest(manifest({ files: [{ path: 'keys/encryption.key', ...file }] }))).to.throw(/no event log/);
  });
});
