import { join } from 'node:path';
import { metadataFor, type EventToAppend } from '../shared/events.ts';
import { ProjectionRunner } from '../projections/runner/ProjectionRunner.ts';
import { usersProjection } from '../projections/users/usersProjection.ts';
import { MemoryReadStore } from '../projections/read-store/MemoryReadStore.ts';
import { openSqliteEventStore } from '../ops/event-store/sqlite/SqliteEventStore.ts';

const EVENTS_PER_USER = 5;

/**
 * Read-model rebuild as `npm start` does it: the projection runner replays the SQLite log into
 * the in-memory read store. The log holds `events` user events (one creation and four password
 * changes per user), so documents are read, evolved and written as in production.
 */
export async function benchRebuild(opts: { dir: string; events?: number }): Promise<Array<Record<string, unknown>>> {
  const total = opts.events ?? 1_000_000;
  const users = Math.floor(total / EVENTS_PER_USER);
  const store = openSqliteEventStore({ file: join(opts.dir, 'rebuild-projection.sqlite'), synchronous: 'normal' });
  const meta = metadataFor(null, new Date('2026-01-01T00:00:00Z'), 'bench');
  const batch: Array<Promise<unknown>> = [];
  for (let index = 0; index < users; index += 1) {
    const laui = (0x65a00000 + 1).toString(16) + index.toString(16).padStart(16, '0');
    const events: EventToAppend[] = [
      {
        type: 'UserCreated',
        data: { laui, username: `user${index}`, email: `user${index}@example.com`, password_hash: 'scrypt$x', must_change_password: false, is_admin: false },
        metadata: meta,
      },
      ...Array.from({ length: EVENTS_PER_USER - 1 }, (_, change) => ({
        type: 'UserPasswordChanged',
        data: { password_hash: `scrypt$${change}` },
        metadata: meta,
      })),
    ];
    batch.push(store.append(`user-${laui}`, events, 'no_stream'));
    if (batch.length >= 2000) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);

  const readStore = new MemoryReadStore();
  const runner = new ProjectionRunner({ name: 'bench', eventStore: store, readStore, projections: [usersProjection] });
  const memoryBefore = process.memoryUsage().rss;
  const started = process.hrtime.bigint();
  await runner.start();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const documents = await readStore.collection('users').count();
  await runner.stop();
  await store.close();
  const rate = (users * EVENTS_PER_USER) / seconds;
  return [
    {
      figure: 'readmodel.rebuild',
      value: Math.round(rate),
      unit: 'events/s',
      events: users * EVENTS_PER_USER,
      documents,
      seconds: Number(seconds.toFixed(2)),
      rssGrowthMiB: Math.round((process.memoryUsage().rss - memoryBefore) / 2 ** 20),
      baseline: 'eventstore.rebuild.readAll (raw replay without projections) in the same run',
      target: '>= 100000 events/s',
      pass: rate >= 100_000,
    },
  ];
}
