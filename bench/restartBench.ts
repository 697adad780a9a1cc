import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './freePort.ts';
import { seedLargeFolder } from '../test/support/seedCatalog.ts';
import { seedTaskRuns } from '../test/support/seedTaskRuns.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');

const rssMiB = (pid: number): number => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(match?.[1] ?? 0) / 1024);
};

interface Start {
  seconds: number;
  rssMiB: number;
  snapshotLoaded: boolean;
  /** After a snapshot's load: the RSS once the indexes left to the background are built, and how long after ready that was. */
  indexed: { rssMiB: number; secondsAfterReady: number } | null;
}

/** One start of the compiled service on `dataDir`: seconds to /healthz 200 and its RSS then; stopped gracefully after. */
const start = async (dataDir: string, registry: string, env: Record<string, string> = {}): Promise<Start> => {
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
      if (performance.now() - started > 1_800_000) throw new Error('not ready after 30 minutes');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const rss = rssMiB(child.pid as number);
    const snapshotLoaded = /Read models loaded from the snapshot/.test(output);
    let indexed: Start['indexed'] = null;
    if (snapshotLoaded) {
      while (!/Read-model indexes built/.test(output)) {
        if (child.exitCode !== null) throw new Error(`the service exited ${child.exitCode}: ${output.slice(-2000)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      indexed = { rssMiB: rssMiB(child.pid as number), secondsAfterReady: (performance.now() - started) / 1000 - seconds };
    }
    return { seconds, rssMiB: rss, snapshotLoaded, indexed };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
};

const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

/**
 * Issue 35: restarts of the compiled service on a long history, to /healthz ready and RSS then:
 * the whole log replayed (today's start: no snapshot in DATA_DIR yet; snapshots are only taken
 * once the catch-up is over, so up to ready it is the start without snapshots; its graceful stop
 * writes the snapshot) against the start from that snapshot, in the same run. Two histories: a
 * folder of `items` catalog items (the read models are big), and `runEvents` events of task runs
 * on 100 tasks (the read models are small, the log long). An empty DATA_DIR's start comes first:
 * the machine's own start-up time, which the snapshot's figures include.
 */
export const benchRestart = async (options: { dir: string; items: number; runEvents: number }): Promise<Array<Record<string, unknown>>> => {
  const { ensureServiceBuilt } = (await import(join(REPO, 'ops', 'build', 'buildService.mjs'))) as { ensureServiceBuilt(): Promise<unknown> };
  await ensureServiceBuilt();
  const work = await mkdtemp(join(options.dir, 'restart-'));
  const figures: Array<Record<string, unknown>> = [];
  const print = (figure: Record<string, unknown>) => figures.push(figure);
  try {
    const registry = join(work, 'run-uids');
    const dataDirOf = (name: string) => {
      const dataDir = join(work, name);
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      return dataDir;
    };
    const empty = await start(dataDirOf('empty'), registry);
    print({ bench: 'restart', name: 'reference: an empty DATA_DIR (the start-up time alone)', seconds_to_ready: round(empty.seconds), rss_mib: empty.rssMiB });
    const histories: Array<[string, (dataDir: string) => Promise<unknown>]> = [
      [`${options.items} items`, (dataDir) => seedLargeFolder(dataDir, options.items)],
      [`${options.runEvents} events of task runs`, (dataDir) => seedTaskRuns(dataDir, { events: options.runEvents, tasks: 100 })],
    ];
    for (const [history, seed] of histories) {
      const dataDir = dataDirOf(history.replace(/\W+/g, '-'));
      await seed(dataDir);
      const replay = await start(dataDir, registry);
      if (replay.snapshotLoaded) throw new Error('the baseline start found a snapshot');
      print({ bench: 'restart', name: `baseline: whole log replayed, ${history}`, seconds_to_ready: round(replay.seconds), rss_mib: replay.rssMiB });
      const fromSnapshot = await start(dataDir, registry);
      print({
        bench: 'restart',
        name: `from the snapshot, ${history}`,
        seconds_to_ready: round(fromSnapshot.seconds),
        rss_mib: fromSnapshot.rssMiB,
        snapshot_loaded: fromSnapshot.snapshotLoaded,
        ratio_seconds: round(fromSnapshot.seconds / replay.seconds, 3),
        ratio_rss: round(fromSnapshot.rssMiB / replay.rssMiB, 3),
        // The indexes the load left to the background, once built: the RSS the service settles at.
        rss_mib_indexes_built: fromSnapshot.indexed?.rssMiB ?? null,
        ratio_rss_indexes_built: fromSnapshot.indexed ? round(fromSnapshot.indexed.rssMiB / replay.rssMiB, 3) : null,
        indexes_built_seconds_after_ready: fromSnapshot.indexed ? round(fromSnapshot.indexed.secondsAfterReady) : null,
        target: '<= 5 s to /healthz; RSS >= 30% below the replay',
      });
      rmSync(dataDir, { recursive: true, force: true });
    }
    return figures;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
};
