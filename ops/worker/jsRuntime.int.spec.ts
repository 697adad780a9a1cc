import { expect } from 'chai';
import type { ActionOutcome, RunLimits } from '../../shared/ports/CodeRunner.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';

const MB = 1024 * 1024;
const LIMITS: RunLimits = { timeoutMs: 10_000, memoryMb: 96, maxOutputBytes: 64 * 1024 };

/**
 * runtime.cjs specifics: it is CommonJS and loads user code with require() (import() for what
 * require() cannot run), and it resets V8's heap flag while it loads its own modules (so that
 * node's code cache is used), putting it back before user code runs.
 */
describe('JavaScript runtime (runtime.cjs): module forms and start-up', function () {
  this.timeout(20_000);
  let runner: ProcessCodeRunner;

  before(async () => {
    runner = new ProcessCodeRunner({ poolSize: 1 });
    await runner.warmUp('javascript', LIMITS.memoryMb);
  });

  after(async () => {
    await runner.close();
  });

  function action(code: string): Promise<ActionOutcome> {
    return runner.runAction({ codeblock: { language: 'javascript', code }, connection: {}, actionVariables: { n: 20 }, context: {}, limits: LIMITS });
  }

  async function result(code: string): Promise<unknown> {
    const outcome = await action(code);
    if (!outcome.ok) throw new Error(`action failed: ${outcome.message}`);
    return outcome.result;
  }

  const forms: Array<[string, string, unknown]> = [
    ['an ES module with a named export', 'export function run(c, v) { return { form: "esm", n: v.n, self: this === undefined }; }', { form: 'esm', n: 20, self: true }],
    ['an ES module with an async named export', 'export async function run(c, v) { await new Promise((r) => setTimeout(r, 5)); return { n: v.n + 1 }; }', { n: 21 }],
    ['an ES module with a default export object', 'export default { k: 7, run() { return { k: this.k }; } };', { k: 7 }],
    ['CommonJS module.exports', 'module.exports = { k: 8, run(c, v) { return { k: this.k, n: v.n }; } };', { k: 8, n: 20 }],
    ['CommonJS exports.run', 'exports.run = async (c, v) => ({ n: v.n * 2, cjs: typeof require === "function" });', { n: 40, cjs: true }],
    ['CommonJS using a dynamic import()', 'module.exports = { async run() { const { posix } = await import("node:path"); return { joined: posix.join("a", "b") }; } };', { joined: 'a/b' }],
    [
      'an ES module with top-level await (which require() cannot run)',
      'globalThis.evaluations = (globalThis.evaluations ?? 0) + 1;\nawait new Promise((r) => setTimeout(r, 5));\nexport function run() { return { evaluations: globalThis.evaluations }; }',
      // import() loads it; require() gave up before running it, so its top level ran once.
      { evaluations: 1 },
    ],
  ];
  for (const [given, code, expected] of forms) {
    it(`given ${given}, when it runs as an action, then run is found and called`, async () => {
      expect(await result(code)).to.deep.equal(expected);
    });
  }

  it('given CommonJS code with a syntax error, when it runs, then the action is invalid', async () => {
    const outcome = await action('module.exports = { run( };');
    expect(!outcome.ok && outcome.kind).to.equal('invalid');
  });

  it('given a no-op action, when it runs, then its log is empty (the runtime’s start-up prints nothing, e.g. no deprecation warning)', async () => {
    const outcome = await action('export function run() { return {}; }');
    expect(outcome.ok).to.equal(true);
    expect(outcome.logs).to.equal('');
  });

  it('given user code starting a worker thread, when it reads the heap limits, then the process and its worker keep the memory limit', async () => {
    // The shim resets --max-old-space-size while it loads its own modules; a worker's isolate reads
    // the flag when created, so it must be back by the time user code runs (else ~4 GB here).
    const limits = (await result(`
import { Worker } from 'node:worker_threads';
import v8 from 'node:v8';
export async function run() {
  const worker = await new Promise((resolve, reject) => {
    const w = new Worker("require('node:worker_threads').parentPort.postMessage(require('node:v8').getHeapStatistics().heap_size_limit)", { eval: true });
    w.once('message', (limit) => { resolve(limit); void w.terminate(); });
    w.once('error', reject);
  });
  return { main: v8.getHeapStatistics().heap_size_limit, worker, execArgv: process.execArgv };
}
`)) as { main: number; worker: number; execArgv: string[] };
    expect(limits.execArgv).to.include(`--max-old-space-size=${LIMITS.memoryMb}`);
    // heap_size_limit = old space (the flag) + young generation (a few MB).
    expect(limits.main).to.be.within(LIMITS.memoryMb * MB, (LIMITS.memoryMb + 64) * MB);
    expect(limits.worker).to.be.within(LIMITS.memoryMb * MB, (LIMITS.memoryMb + 64) * MB);
  });

  it('given a large argument with multi-byte characters, when it is echoed, then it arrives and returns intact (protocol line splitting)', async () => {
    const text = '€ü✓'.repeat(150_000) + '\n' + 'x'.repeat(70_000);
    const outcome = await runner.runAction({
      codeblock: { language: 'javascript', code: 'export function run(c, v) { return { length: v.text.length, head: v.text.slice(0, 6), tail: v.text.slice(-3) }; }' },
      connection: {},
      actionVariables: { text },
      context: {},
      limits: LIMITS,
    });
    if (!outcome.ok) throw new Error(`action failed: ${outcome.message}`);
    expect(outcome.result).to.deep.equal({ length: text.length, head: '€ü✓€ü✓', tail: 'xxx' });
  });
});
