import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './freePort.ts';
import { seedLargeFolder } from '../test/support/seedCatalog.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');

const rssMiB = (pid: number): number => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(match?.[1] ?? 0) / 1024);
};

/** One start of the compiled service on `dataDir`: seconds to /healthz 200 and its RSS then; stopped gracefully after. */
const start = async (dataDir: string, registry: string, env: Record<string, string>): Promise<{ seconds: number; rssMiB: number; snapshotLoaded: boolean }> => {
  const port = await freePort();
  const started = performance.now();
  let output = '';
  const child = spawn(process.execPath, [join(REPO, 'dist', 'main.js')], {
    cwd: REPO,
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, WORKER_RUN_AS_REGISTRY: registry, ADMIN_PASSWORD: 'bench-admin-1', WORKER_POOL_SIZE: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the service exited ${child.exitCode}: ${output.slice(-2000)}`);
      if (await fetch(`http://127.0.0.1:${port}/healthz`).then((reply) => reply.status === 200, () => false)) break;
      if (performance.now() - started > 900_000) throw new Error('not ready after 15 minutes');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return { seconds: (performance.now() - started) / 1000, rssMiB: rssMiB(child.pid as number), snapshotLoaded: /Read models loaded from the snapshot/.test(output) };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
};

/**
 * Issue 35: a restart with `items` catalog items in the log, today's way (the whole log replayed:
 * SNAPSHOT_INTERVAL_EVENTS=0, the baseline) against a start from the snapshot the previous stop
 * wrote, in the same run: time to /healthz ready and RSS then.
 */
export const benchRestart = async (options: { dir: string; items: number }): Promise<Array<Record<string, unknown>>> => {
  const { ensureServiceBuilt } = (await import(join(REPO, 'ops', 'build', 'buildService.mjs'))) as { ensureServiceBuilt(): Promise<unknown> };
  await ensureServiceBuilt();
  const work = await mkdtemp(join(options.dir, 'restart-'));
  try {
    const dataDir = join(work, 'data');
    const registry = join(work, 'run-uids');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    await seedLargeFolder(dataDir, options.items);
    const replay = await start(dataDir, registry, { SNAPSHOT_INTERVAL_EVENTS: '0' });
    // The first start with snapshots replays too; its graceful stop writes the snapshot.
    await start(dataDir, registry, {});
    const fromSnapshot = await start(dataDir, registry, {});
    return [
      { bench: 'restart', name: `baseline: whole log replayed, ${options.items} items`, seconds_to_ready: Number(replay.seconds.toFixed(2)), rss_mib: replay.rssMiB },
      {
        bench: 'restart',
        name: `from the snapshot, ${options.items} items`,
        seconds_to_ready: Number(fromSnapshot.seconds.toFixed(2)),
        rss_mib: fromSnapshot.rssMiB,
        snapshot_loaded: fromSnapshot.snapshotLoaded,
        ratio_seconds: Number((fromSnapshot.seconds / replay.seconds).toFixed(3)),
        ratio_rss: Number((fromSnapshot.rssMiB / replay.rssMiB).toFixed(3)),
        target: '<= 5 s to /healthz; RSS >= 30% below the replay',
      },
    ];
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
};
