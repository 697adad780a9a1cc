import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './freePort.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Seconds from spawn to GET /healthz answering 200, on an empty DATA_DIR; the process is stopped after. */
const startSeconds = async (dir: string, args: string[]): Promise<number> => {
  const data = mkdtempSync(join(dir, 'start-'));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: REPO,
    env: { ...process.env, PORT: String(port), DATA_DIR: join(data, 'data'), WORKER_RUN_AS_REGISTRY: join(data, 'run-uids'), ADMIN_PASSWORD: 'bench-admin-1' },
    stdio: 'ignore',
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited ${child.exitCode} before it was ready`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((reply) => reply.status === 200, () => false);
      if (ok) return (performance.now() - started) / 1000;
      if (performance.now() - started > 120_000) throw new Error(`${args.join(' ')} not ready after 120 s`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    rmSync(data, { recursive: true, force: true });
  }
};

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

/**
 * Issue 35's compiled start: time to /healthz on an empty DATA_DIR, the compiled bundle (what npm
 * start runs) against the sources through tsx (the baseline, what npm start ran before), in
 * alternating rounds of the same run.
 */
export const benchStart = async (options: { dir: string; rounds: number }): Promise<Array<Record<string, unknown>>> => {
  const { ensureServiceBuilt } = (await import(join(REPO, 'ops', 'build', 'buildService.mjs'))) as { ensureServiceBuilt(): Promise<{ built: boolean }> };
  await ensureServiceBuilt();
  const compiled: number[] = [];
  const tsx: number[] = [];
  for (let round = 0; round < options.rounds; round += 1) {
    compiled.push(await startSeconds(options.dir, [join(REPO, 'dist', 'main.js')]));
    tsx.push(await startSeconds(options.dir, ['--import', 'tsx', join(REPO, 'ops', 'main.ts')]));
  }
  const figure = (name: string, samples: number[]) => ({
    bench: 'start',
    name,
    rounds: options.rounds,
    median_seconds: Number(median(samples).toFixed(3)),
    min_seconds: Number(Math.min(...samples).toFixed(3)),
    max_seconds: Number(Math.max(...samples).toFixed(3)),
  });
  return [figure('compiled (node dist/main.js) to /healthz, empty DATA_DIR', compiled), { ...figure('baseline: tsx ops/main.ts to /healthz, empty DATA_DIR', tsx), ratio_compiled: Number((median(compiled) / median(tsx)).toFixed(3)) }];
};
