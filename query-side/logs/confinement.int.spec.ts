import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { rawRequest } from '../../test/support/rawRequest.ts';
import { rawBody, sseEvents } from '../../test/support/sseEvents.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

/**
 * listItems and file never serve anything outside the logs root. Requests go out byte for byte
 * (rawRequest): `..` and percent-encodings reach the service as a client wrote them, not as a URL
 * library would normalise them.
 */
describe('logs routes stay inside the logs root (traversal, encodings, symlinks)', () => {
  let svc: TestService;
  let logs: string;
  // Made now, not in before(): the attempts below name it.
  const outside = mkdtempSync(join(tmpdir(), 'outside-logs-'));
  const SECRET = 'TOP-SECRET-OUTSIDE-THE-LOGS-ROOT';

  before(async () => {
    svc = await startTestService();
    logs = join(svc.dataDir, 'logs');
    mkdirSync(join(logs, 'TASK'), { recursive: true });
    writeFileSync(join(logs, 'TASK', '2026-01-01.jsonl'), '{"level":"info","message":"inside"}\n');
    writeFileSync(join(outside, 'secret.jsonl'), `${SECRET}\n`);
    // A file DATA_DIR holds next to the logs: one level up from the root.
    writeFileSync(join(svc.dataDir, 'neighbour.jsonl'), `${SECRET}\n`);
    symlinkSync(join(outside, 'secret.jsonl'), join(logs, 'leak.jsonl'));
    symlinkSync(outside, join(logs, 'leakdir'));
    symlinkSync(outside, join(logs, 'TASK', 'nested-leak'));
    // A link that stays inside: resolved, contained, served.
    symlinkSync(join(logs, 'TASK', '2026-01-01.jsonl'), join(logs, 'TASK', 'today.jsonl'));
  });
  after(async () => {
    await svc.stop();
    rmSync(outside, { recursive: true, force: true });
  });

  const get = async (path: string) => {
    const reply = await rawRequest(svc.service.url, { method: 'GET', path });
    const body = rawBody(reply);
    return { status: reply.status, head: reply.head, body, events: reply.status === 200 ? sseEvents(body) : [] };
  };

  const expectRefused = async (path: string, message: string): Promise<void> => {
    const reply = await get(path);
    expect(reply.status, path).to.equal(200);
    expect(reply.head, path).to.match(/content-type: text\/event-stream/i);
    expect(reply.events, path).to.deep.equal([
      { event: 'status', data: { state: 'processing' } },
      { event: 'error', data: { message } },
    ]);
    expect(reply.body, path).not.to.include(SECRET);
    expect(reply.body, path).not.to.include('root:');
    expect(reply.body, path).not.to.include('secret.jsonl');
  };

  const up = '../'.repeat(12);
  const fileAttempts: Array<[string, string]> = [
    ['dot-dot', `${up}etc/passwd`],
    ['dot-dot to a neighbour of the logs root', '../neighbour.jsonl'],
    ['dot-dot after a real folder', 'TASK/../../neighbour.jsonl'],
    ['encoded dots', `${'%2e%2e/'.repeat(12)}etc/passwd`],
    ['encoded dots and slashes', `${'%2e%2e%2f'.repeat(12)}etc%2fpasswd`],
    ['encoded slashes only', '..%2f..%2fneighbour.jsonl'],
    ['double-encoded dots and slashes', `${'%252e%252e%252f'.repeat(12)}etc%252fpasswd`],
    ['double-encoded dots', '%252e%252e/neighbour.jsonl'],
    ['overlong UTF-8 slash', '..%c0%af..%c0%afetc%c0%afpasswd'],
    ['backslashes', `${'..%5c'.repeat(12)}etc%5cpasswd`],
    ['raw backslash-encoded dots', '..\\neighbour.jsonl'],
    ['absolute', '/etc/passwd'],
    ['encoded absolute', '%2fetc%2fpasswd'],
    ['absolute to the real file', `/${join(outside, 'secret.jsonl').replace(/^\//, '')}`],
    ['NUL byte', 'TASK/2026-01-01.jsonl%00.txt'],
    ['NUL byte before a traversal', `%00/${up}etc/passwd`],
    ['dot segment', './TASK/2026-01-01.jsonl'],
    ['hidden name', '.secret'],
    ['empty segment', 'TASK//2026-01-01.jsonl'],
    ['symlink to a file outside', 'leak.jsonl'],
    ['symlinked directory component', 'leakdir/secret.jsonl'],
    ['symlinked directory component, nested', 'TASK/nested-leak/secret.jsonl'],
    ['dot-dot into the outside directory by name', `../../../../../../../../..${outside}/secret.jsonl`],
  ];

  for (const [what, path] of fileAttempts) {
    it(`given a file path with ${what}, when read, then the error event and nothing of the file`, async () => {
      await expectRefused(`/api/v1/logs/file/${path}`, 'File not found');
      await expectRefused(`/api/v1/logs/file/${path}?reverse=true&limit=10`, 'File not found');
    });
  }

  const folderAttempts: Array<[string, string]> = [
    ['dot-dot', '..'],
    ['dot-dot deep', `${up}etc`],
    ['dot-dot after a real folder', 'TASK/..'],
    ['encoded dots', '%2e%2e'],
    ['double-encoded dots', '%252e%252e'],
    ['encoded dots and slash', '%2e%2e%2f%2e%2e'],
    ['backslashes', '..%5c..'],
    ['absolute', '/etc'],
    ['encoded absolute', '%2fetc'],
    ['NUL byte', 'TASK%00'],
    ['symlinked directory', 'leakdir'],
    ['symlinked directory, nested', 'TASK/nested-leak'],
    ['the outside directory by its absolute path', outside],
  ];

  for (const [what, path] of folderAttempts) {
    it(`given a folder path with ${what}, when listed, then the error event and no listing`, async () => {
      await expectRefused(`/api/v1/logs/listItems/${path}`, 'Directory not found');
    });
  }

  it('given symlinks in a folder, when listed, then they are left out (neither name nor target size nor date)', async () => {
    const root = await get('/api/v1/logs/listItems');
    const names = ((root.events[1]?.data.items ?? []) as Array<{ name: string }>).map((item) => item.name);
    expect(names).to.include('TASK');
    expect(names).not.to.include.members(['leak.jsonl']);
    expect(names).not.to.include('leakdir');
    const task = await get('/api/v1/logs/listItems/TASK');
    expect(((task.events[1]?.data.items ?? []) as Array<{ name: string }>).map((item) => item.name)).to.deep.equal(['2026-01-01.jsonl']);
    expect(root.body).not.to.include(basename(outside));
  });

  it('given a symlink that stays inside the logs root, when read, then it is served (containment is of the resolved path)', async () => {
    const reply = await get('/api/v1/logs/file/TASK/today.jsonl');
    expect(reply.events.map((event) => event.event)).to.deep.equal(['status', 'metadata', 'chunk', 'done']);
    expect(reply.events[2]?.data).to.deep.equal({ content: '{"level":"info","message":"inside"}\n' });
  });

  it('given a percent-encoded name of a real file, when read, then it is served (one decoding, as for any path)', async () => {
    const reply = await get('/api/v1/logs/file/TASK%2f2026-01-01.jsonl');
    expect(reply.events.map((event) => event.event)).to.deep.equal(['status', 'metadata', 'chunk', 'done']);
  });
});
