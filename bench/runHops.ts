import { mkdtempSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openBed, FINISHED } from './taskBench.ts';

/**
 * `npm run hops` (issue 34): the domain files a manual run crosses. The service runs in this
 * process; after a warm-up run of a no-op task, one more POST /task/run of it is made and the
 * functions that ran until the task reads success are taken from V8's precise coverage (call
 * counts, reset at each take). Taking it at every turn of the event loop gives each file the turn
 * it first ran in: the list is in first-call order at that grain (files first seen in one turn are
 * in path order). Files that also run in an idle window after it (three times as long, at least 1.5 s; timers: scheduler,
 * reaper, projector polls) are listed apart and not counted: they do not run for the run.
 *
 * Domain files: command-side/, query-side/, projections/ and shared/ except shared/http/ (request
 * plumbing), specs excluded; ops/ is the composition roots and adapters, not domain (decisions.md).
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOMAIN = ['command-side', 'query-side', 'projections', 'shared'];
const PLUMBING = [`shared${sep}http${sep}`];

/** The repository-relative path of a script URL when it is a domain file, else null. */
export const domainFile = (url: string): string | null => {
  if (!url.startsWith('file:')) return null;
  const path = relative(ROOT, fileURLToPath(url.split('?')[0] as string));
  if (path.startsWith('..') || path.includes(`node_modules${sep}`) || /\.spec\.ts$/.test(path)) return null;
  if (!DOMAIN.some((folder) => path.startsWith(folder + sep))) return null;
  if (PLUMBING.some((prefix) => path.startsWith(prefix))) return null;
  return path.split(sep).join('/');
};

interface ScriptCoverage {
  url: string;
  functions: Array<{ ranges: Array<{ count: number }> }>;
}

/** The domain files with a function called since the last take (the take resets the counts). */
const ranSinceLastTake = async (session: Session): Promise<Set<string>> => {
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as unknown as { result: ScriptCoverage[] };
  const files = new Set<string>();
  for (const script of result) {
    const file = domainFile(script.url);
    if (file !== null && script.functions.some((fn) => (fn.ranges[0]?.count ?? 0) > 0)) files.add(file);
  }
  return files;
};

/** Takes coverage at every turn of the event loop while `work` runs: files in the order they first ran. */
const traceFiles = async (session: Session, work: () => Promise<void>): Promise<string[]> => {
  await ranSinceLastTake(session);
  const order: string[] = [];
  const seen = new Set<string>();
  const note = (files: Set<string>) => {
    for (const file of [...files].sort()) {
      if (seen.has(file)) continue;
      seen.add(file);
      order.push(file);
    }
  };
  let done = false;
  const poll = async (): Promise<void> => {
    while (!done) {
      note(await ranSinceLastTake(session));
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const polling = poll();
  try {
    await work();
  } finally {
    done = true;
    await polling;
  }
  note(await ranSinceLastTake(session));
  return order;
};

export interface Hops {
  figure: 'task.manual_run.domain_files';
  count: number;
  /** The feature folders those files are in (command-side/task, shared/task, ...). */
  folders: string[];
  files: string[];
  /** Domain files that also ran in the idle window after the run: timers, not the run. */
  background: string[];
  ms: number;
}

export async function measureHops(dir: string): Promise<Hops> {
  const bed = await openBed(dir, { WORKER_CONCURRENCY: '4', WORKER_RUN_AS_REGISTRY: join(dir, 'hops-run-uids') });
  const session = new Session();
  session.connect();
  try {
    const operator = await bed.operator('javascript', true, 'hops');
    const task = String((await bed.api('/task/run', bed.createAndRun('hops', operator))).item_laui);
    const items = bed.service.readStore.collection('items');
    const until = async (iteration: number) => {
      for (;;) {
        const doc = await items.peek(task);
        if (doc && doc.iteration === iteration && FINISHED.includes(String(doc.state))) return String(doc.state);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    };
    await until(1);
    // The warm-up's second run: every lazy path (caches, templates, the reused process) is taken.
    await bed.api('/task/run', { item_laui: task });
    await until(2);
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    const started = performance.now();
    let state = '';
    const files = await traceFiles(session, async () => {
      await bed.api('/task/run', { item_laui: task });
      state = await until(3);
    });
    const ms = performance.now() - started;
    if (state !== 'success') throw new Error(`the measured run ended ${state}`);
    const idle = new Set(await traceFiles(session, () => new Promise((resolve) => setTimeout(resolve, Math.max(1500, 3 * ms)))));
    await session.post('Profiler.stopPreciseCoverage');
    const counted = files.filter((file) => !idle.has(file));
    const folders = [...new Set(counted.map((file) => file.split('/').slice(0, -1).join('/')))];
    return { figure: 'task.manual_run.domain_files', count: counted.length, folders, files: counted, background: files.filter((file) => idle.has(file)), ms: Math.round(ms) };
  } finally {
    session.disconnect();
    await bed.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = mkdtempSync(join(tmpdir(), 'hops-'));
  measureHops(dir)
    .then((hops) => {
      console.log(JSON.stringify(hops));
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    })
    .catch((error: unknown) => {
      console.error(error);
      rmSync(dir, { recursive: true, force: true });
      process.exit(1);
    });
}
