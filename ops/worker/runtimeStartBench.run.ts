/**
 * CPU a fresh JavaScript runtime process costs: npx tsx ops/worker/runtimeStartBench.run.ts [runs]
 *
 * Starts runtime.cjs exactly as the runner does (SpawnedProcess: scrubbed env, own process group,
 * protocol on fd 3, runtimeArgs) one process at a time, and reads the CPU time of all its threads
 * from /proc/<pid>/task/<tid>/schedstat (nanoseconds; /usr/bin/time and /proc/<pid>/stat only
 * have 10 ms ticks) when it says ready, and after it loaded and called a no-op `run`. The figures
 * are CPU, not wall time, so that they mean something on a loaded machine. Linux only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SpawnedProcess } from './processHandle.ts';
import { RuntimeProcess, runtimeArgs } from './RuntimeProcess.ts';
import { makeRunDir, removeRunDir } from './sandbox.ts';

const MEMORY_MB = 128;
const FORMS = {
  esm: 'export function run(connection, payload, context) { return null; }\n',
  cjs: 'module.exports = { run(connection, payload, context) { return null; } };\n',
};

/** CPU milliseconds used so far by all threads of `pid`. */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // thread ended meanwhile
    }
  }
  return ns / 1e6;
}

async function once(code: string): Promise<{ ready: number; called: number }> {
  const dir = makeRunDir();
  const file = join(dir, 'user_code.js');
  await writeFile(file, code);
  const proc = new RuntimeProcess({
    language: 'javascript',
    memoryMb: MEMORY_MB,
    dir,
    memoryHeadroomMb: 64,
    launch: (events) => new SpawnedProcess({ label: 'javascript', executable: process.execPath, args: runtimeArgs('javascript', MEMORY_MB), dir }, events),
  });
  // Busy: holds this script's event loop open, as a process taken for a run does.
  proc.setBusy(true);
  try {
    await proc.ready;
    const pid = proc.pid as number;
    const ready = cpuMs(pid);
    const loaded = await proc.request({ op: 'load', file, dir }).response;
    if (!loaded.ok) throw new Error(`load failed: ${loaded.error.message}`);
    const called = await proc.request({ op: 'call', fn: 'run', args: [{}, {}, {}] }).response;
    if (!called.ok) throw new Error(`call failed: ${called.error.message}`);
    return { ready, called: cpuMs(pid) };
  } finally {
    proc.kill('killed');
    await proc.exited;
    await removeRunDir(dir);
  }
}

const runs = process.argv[2] ? Number(process.argv[2]) : 40;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const round1 = (value: number) => Math.round(value * 10) / 10;
for (const [form, code] of Object.entries(FORMS)) {
  // The first runs fill the page cache.
  for (let i = 0; i < 3; i++) await once(code);
  const samples: Array<{ ready: number; called: number }> = [];
  for (let i = 0; i < runs; i++) samples.push(await once(code));
  const note = `CPU of the runtime process (all threads), exec to ready / to the answer of a no-op run (${form} user code)`;
  for (const key of ['ready', 'called'] as const) {
    const values = samples.map((s) => s[key]);
    const mean = values.reduce((sum, v) => sum + v, 0) / values.length;
    console.log(JSON.stringify({ figure: `coderunner.javascript.start.cpu.${key}.${form}`, p50: round1(median(values)), mean: round1(mean), unit: 'ms', samples: runs, note }));
  }
}
