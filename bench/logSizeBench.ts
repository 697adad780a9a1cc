import { statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { RecordedEvent } from '../shared/event-store/EventStore.ts';
import { storedBytesByType, writeLegacyLayout } from '../ops/event-store/sqlite/logSize.ts';
import { FINISHED, openBed } from './taskBench.ts';

/** Tasks run side by side; each runs its share of the runs one after the other. */
const TASKS = 8;

/**
 * Issue 35: what a no-op run writes to events.sqlite, on a fresh DATA_DIR. Two figures: a task run
 * again (`logsize.noop_run`) and a task created by its run (`logsize.noop_create_and_run`, POST
 * /task/run with a new task's fields). Each: bytes of the file per run (the WAL checkpointed into
 * it first, so the file holds everything), events per run, stored bytes per event type, and the
 * same-run baseline: the very same events written in the layout of the release before (one
 * `events` table of JSON text), measured the same way.
 */
export async function benchLogSize(opts: { dir: string; runs: number }): Promise<Array<Record<string, unknown>>> {
  // A registry of its own, as the restart bench: another service on the host (a test run) does not stop this one.
  const bed = await openBed(opts.dir, { WORKER_RUN_AS_REGISTRY: join(opts.dir, 'logsize-run-uids') });
  const { service, api, operator, createAndRun } = bed;
  const file = join(bed.dataDir, 'events.sqlite');
  try {
    const op = await operator('javascript', true, 'logsize');
    const until = async (laui: string, iteration: number): Promise<void> => {
      for (;;) {
        const task = await service.readStore.collection('items').peek(laui);
        if (task && Number(task.iteration) >= iteration && FINISHED.includes(String(task.state))) return;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    };
    const perTask = Math.max(1, Math.round(opts.runs / TASKS));
    // Runs of existing tasks: each created and run once first (the creation is not counted).
    const lauis: string[] = [];
    for (let index = 0; index < TASKS; index += 1) {
      const laui = String((await api('/task/run', createAndRun(`logsize-${index}`, op))).item_laui);
      await until(laui, 1);
      lauis.push(laui);
    }
    const rerun = await measure(true, file, service.eventStore, async () => {
      await Promise.all(
        lauis.map(async (laui) => {
          for (let round = 2; round < 2 + perTask; round += 1) {
            await api('/task/run', { item_laui: laui });
            await until(laui, round);
          }
        }),
      );
      return perTask * TASKS;
    });
    let created = 0;
    const createAndRunFigure = await measure(false, file, service.eventStore, async () => {
      await Promise.all(
        Array.from({ length: TASKS }, async (_, client) => {
          for (let round = 0; round < perTask; round += 1) {
            const laui = String((await api('/task/run', createAndRun(`logsize-new-${client}-${round}`, op))).item_laui);
            await until(laui, 1);
            created += 1;
          }
        }),
      );
      return created;
    });
    return [
      { figure: 'logsize.noop_run', ...rerun, note: `${TASKS} tasks run again side by side (JavaScript no-op, reused process), SQLITE_SYNCHRONOUS=full` },
      { figure: 'logsize.noop_create_and_run', ...createAndRunFigure, note: `POST /task/run creating its task, ${TASKS} clients` },
    ];
  } finally {
    await bed.close();
  }

  /** `targeted`: the target (at most 1.5 KB per run) applies; not to a run that also creates its task. */
  async function measure(
    targeted: boolean,
    path: string,
    store: { headPosition(): Promise<bigint>; readAll(options: { after: bigint; maxCount: number }): Promise<RecordedEvent[]> },
    work: () => Promise<number>,
  ): Promise<Record<string, unknown>> {
    await settle(store);
    const before = fileBytes(path);
    const from = await store.headPosition();
    const runs = await work();
    await settle(store);
    const bytes = fileBytes(path) - before;
    const to = await store.headPosition();
    const events: RecordedEvent[] = [];
    for (let after = from; after < to; ) {
      const page = await store.readAll({ after, maxCount: 1000 });
      if (page.length === 0) break;
      events.push(...page);
      after = page.at(-1)?.position ?? to;
    }
    const legacy = writeLegacyLayout(join(opts.dir, `logsize-legacy-${Date.now()}.sqlite`), events);
    return {
      value: Math.round(bytes / runs),
      unit: 'bytes/run',
      runs,
      events_per_run: Number((events.length / runs).toFixed(2)),
      bytes_per_event: Math.round(bytes / Math.max(events.length, 1)),
      stored_bytes_by_type: storedBytesByType(path, from),
      baseline: { figure: 'the same events in the layout of the release before (events table, JSON text)', value: Math.round(legacy / runs), unit: 'bytes/run' },
      ...(targeted ? { target: '<= 1536 bytes/run', pass: bytes / runs <= 1536 } : {}),
    };
  }
}

/** Waits until the log stops growing (the runs' last commits are in), then checkpoints the WAL into the file. */
async function settle(store: { headPosition(): Promise<bigint> }): Promise<void> {
  let head = await store.headPosition();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = await store.headPosition();
    if (now === head) break;
    head = now;
  }
}

/** The file's size with its WAL checkpointed into it (retried while a reader holds an older snapshot). */
function fileBytes(path: string): number {
  const db = new Database(path);
  try {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
      if (result?.busy === 0) break;
    }
    let wal = 0;
    try {
      wal = statSync(`${path}-wal`).size;
    } catch {
      // No WAL: nothing to add.
    }
    return statSync(path).size + wal;
  } finally {
    db.close();
  }
}
