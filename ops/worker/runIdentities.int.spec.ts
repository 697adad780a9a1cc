import { expect } from 'chai';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Language, OperatorOutcome, OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import { waitUntil } from '../../test/support/waitUntil.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';

/** Starts, notes that it started (`started-<n>` in the shared folder), waits for `go` there, and says who it was and when. */
const HOLDS = `import os, time

def run(connection, payload, context):
    shared = context["shared"]
    start = time.time()
    open(os.path.join(shared, "started-%d" % payload["n"]), "w").close()
    while not os.path.exists(os.path.join(shared, "go")):
        time.sleep(0.02)
    return {"uid": os.getuid(), "start": start, "end": time.time()}
`;

interface Held {
  uid: number;
  start: number;
  end: number;
}

function request(language: Language, code: string, shared: string, n: number, timeoutMs = 120_000): OperatorRunRequest {
  return {
    codeblock: { language, code },
    connection: {},
    payload: { n },
    context: { shared },
    limits: { timeoutMs, memoryMb: 128, maxOutputBytes: 64 * 1024 },
    pollIntervalMs: 50,
    checkCompletionTimeoutMs: 1000,
    isCancelled: async () => false,
  };
}

const held = (outcome: OperatorOutcome): Held => {
  expect(outcome.status, JSON.stringify(outcome)).to.equal('success');
  return (outcome as unknown as { output: Held }).output;
};

/**
 * Run identities as the service uses them as root: never two live processes with one uid. The runs
 * signal through a shared host folder, so the two cases that need it run beneath the per-run sandbox
 * (`sandbox: false`), which would hide that folder; the identity layer is the same.
 */
describe('Run identities: a run waits for a free identity rather than share one', function () {
  this.timeout(180_000);
  let shared = '';

  before(function () {
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: switching run processes to other uids needs root)');
      this.skip();
    }
  });

  beforeEach(() => {
    // Written by every run's uid.
    shared = mkdtempSync(join(tmpdir(), 'run-identities-'));
    chmodSync(shared, 0o1777);
  });

  afterEach(() => {
    if (shared) rmSync(shared, { recursive: true, force: true });
  });

  it('given a range of 3 held by three live runs, when a fourth run starts, then its process waits until one of them ended and runs with that uid, never beside it', async () => {
    const runner = new ProcessCodeRunner({ poolSize: 0, runAs: { uid: 64_500, gid: 64_500, count: 3 }, sandbox: false });
    try {
      const first = [0, 1, 2].map((n) => runner.runOperator(request('python', HOLDS, shared, n)));
      const started = (n: number) => existsSync(join(shared, `started-${n}`));
      await waitUntil(() => [0, 1, 2].every(started), 'the first three runs started', 90_000);

      const fourth = runner.runOperator(request('python', HOLDS, shared, 3));
      await waitUntil(() => runner.runIdentities()?.waiting === 1 || started(3), 'the fourth run waits in line or started', 60_000);
      expect(started(3), 'the fourth run started while the three held every identity').to.equal(false);
      expect(runner.runIdentities()).to.deep.equal({ held: 3, waiting: 1 });

      writeFileSync(join(shared, 'go'), '');
      const [a, b, c] = (await Promise.all(first)).map(held) as [Held, Held, Held];
      const d = held(await fourth);
      expect(new Set([a.uid, b.uid, c.uid]).size).to.equal(3);
      expect([a, b, c].map((run) => run.uid)).to.include(d.uid);
      const before = [a, b, c].find((run) => run.uid === d.uid)!;
      expect(d.start, 'the fourth ran only after the run of its uid had ended').to.be.at.least(before.end);
      await runner.cleanedUp();
      await waitUntil(() => runner.runIdentities()?.held === 0, 'every identity was released', 15_000);
    } finally {
      writeFileSync(join(shared, 'go'), '');
      await runner.close();
    }
  });

  it('given a range of one held by a live run, when another run waits longer than its time limit, then it times out with a message naming WORKER_RUN_AS_COUNT, and the first run is unaffected', async () => {
    const runner = new ProcessCodeRunner({ poolSize: 0, runAs: { uid: 64_500, gid: 64_500, count: 1 }, sandbox: false });
    try {
      const first = runner.runOperator(request('python', HOLDS, shared, 0));
      await waitUntil(() => existsSync(join(shared, 'started-0')), 'the first run started', 90_000);

      const late = await runner.runOperator(request('python', HOLDS, shared, 1, 1500));
      expect(late.status, JSON.stringify(late)).to.equal('timeout');
      expect((late as { message?: string }).message).to.include('waiting for a free run identity').and.include('WORKER_RUN_AS_COUNT');
      expect(existsSync(join(shared, 'started-1'))).to.equal(false);

      writeFileSync(join(shared, 'go'), '');
      expect(held(await first).uid).to.equal(64_500);
    } finally {
      writeFileSync(join(shared, 'go'), '');
      await runner.close();
    }
  });

  it('given a range of one held by the idle warm process of one language, when a run of the other language comes, then the idle process gives its identity up and both languages run', async () => {
    const runner = new ProcessCodeRunner({
      poolSize: 1,
      runAs: { uid: 64_500, gid: 64_500, count: 1 },
      prewarm: [
        { language: 'python', memoryMb: 128 },
        { language: 'javascript', memoryMb: 128 },
      ],
    });
    try {
      const js = 'exports.run = () => ({ uid: process.getuid() });';
      const py = 'import os\n\ndef run(connection, payload, context):\n    return {"uid": os.getuid()}\n';
      for (const [language, code] of [['javascript', js], ['python', py], ['javascript', js]] as const) {
        const outcome = await runner.runOperator(request(language, code, shared, 0, 60_000));
        expect(outcome.status, `${language}: ${JSON.stringify(outcome)}`).to.equal('success');
        expect((outcome as unknown as { output: { uid: number } }).output.uid).to.equal(64_500);
      }
    } finally {
      await runner.close();
    }
  });
});
