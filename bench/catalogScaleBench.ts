import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { metadataFor, type EventToAppend } from '../shared/events.ts';
import { newLaui } from '../shared/ids.ts';
import { loadConfig } from '../ops/config.ts';
import { openSqliteEventStore } from '../ops/event-store/sqlite/SqliteEventStore.ts';
import { startService } from '../ops/service.ts';
import { loginToken } from './catalogBench.ts';
import { itemCreatedEvent } from '../command-side/catalog/itemCreatedEvent.ts';
import { percentile } from './latencyFigures.ts';
import { collectGarbage } from './memoryDuring.ts';


/**
 * A catalog of `items` items (default 1,000,000: one account and project, 1,000 payload folders of
 * 1,000 payloads) written straight to the log, then the service started on it: the rebuild rate,
 * resident memory, and p50/p99 of children listing and searches over HTTP.
 */
export async function benchCatalogScale(opts: { dir: string; items?: number }): Promise<Array<Record<string, unknown>>> {
  const total = opts.items ?? 1_000_000;
  const perFolder = 1000;
  const folders = Math.max(1, Math.round(total / perFolder));
  const dataDir = mkdtempSync(join(opts.dir, 'scale-'));
  const store = openSqliteEventStore({ file: join(dataDir, 'events.sqlite'), synchronous: 'normal' });
  const meta = metadataFor(null, new Date('2026-01-01T00:00:00Z'), 'bench');
  const access = { owners: {}, editors: {}, viewers: {} };
  const created = (laui: string, itemType: string, name: string, parent: { laui: string; type: string } | null, fields: Record<string, unknown>): EventToAppend =>
    itemCreatedEvent({ laui, itemType, name, parent, fields, access, metadata: meta });
  const account = newLaui();
  const project = newLaui();
  await store.append(`item-${account}`, [created(account, 'folder.account', 'scale', null, {})], 'no_stream');
  await store.append(`item-${project}`, [created(project, 'folder.project', 'main', { laui: account, type: 'folder.account' }, {})], 'no_stream');
  const folderLauis: string[] = [];
  const pending: Array<Promise<unknown>> = [];
  for (let folder = 0; folder < folders; folder += 1) {
    const folderLaui = newLaui();
    folderLauis.push(folderLaui);
    await store.append(`item-${folderLaui}`, [created(folderLaui, 'folder.payload', `f${folder}`, { laui: project, type: 'folder.project' }, {})], 'no_stream');
    for (let index = 0; index < perFolder; index += 1) {
      const laui = newLaui();
      pending.push(store.append(`item-${laui}`, [created(laui, 'payload', `p-${folder}-${index}`, { laui: folderLaui, type: 'folder.payload' }, { content: { n: index } })], 'no_stream'));
      if (pending.length >= 2000) await Promise.all(pending.splice(0));
    }
  }
  await Promise.all(pending);
  await store.close();

  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const service = await startService(loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'bench-password-1' }), { announce: () => undefined });
  const rebuildSeconds = (performance.now() - started) / 1000;
  // A full collection first, so the figure is what 1M items keep, not the garbage of the rebuild
  // (without it the same commit read 1.7 or 2.1 GiB depending on where the GC happened to be).
  collectGarbage();
  const { rss, heapUsed } = process.memoryUsage();
  try {
    const token = await loginToken(service, 'bench-password-1');
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const measure = async (name: string, request: (i: number) => Promise<Response>, rounds = 300) => {
      const times: number[] = [];
      for (let i = 0; i < rounds; i += 1) {
        const t0 = performance.now();
        const response = await request(i);
        if (response.status !== 200) throw new Error(`${name}: HTTP ${response.status} ${await response.text()}`);
        await response.arrayBuffer();
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      return { figure: `catalog.1m.${name}`, unit: 'ms', p50: percentile(times, 0.5), p99: percentile(times, 0.99), rounds, target: 'p99 < 20 ms', pass: percentile(times, 0.99) < 20 };
    };
    const folderOf = (i: number) => folderLauis[(i * 7919) % folderLauis.length] as string;
    const search = (body: unknown) => fetch(`${service.url}/api/v1/catalog/search`, { method: 'POST', headers, body: JSON.stringify(body) });
    const figures: Array<Record<string, unknown>> = [
      {
        figure: 'catalog.1m.rebuild_and_start',
        value: Math.round(total / rebuildSeconds),
        unit: 'events/s',
        seconds: Number(rebuildSeconds.toFixed(1)),
        items: total + folders + 2,
        rss_mib: Math.round(rss / 2 ** 20),
        rss_growth_mib: Math.round((rss - rssBefore) / 2 ** 20),
        heap_used_mib: Math.round(heapUsed / 2 ** 20),
      },
      await measure('children_page', (i) => fetch(`${service.url}/api/v1/catalog/get?item_laui=${folderOf(i)}&per_page=10&page=${(i % 100) + 1}`, { headers })),
      await measure('search_by_name', (i) => search({ item_filter: { item_type: 'payload', name: `p-${(i * 31) % folders}-${(i * 17) % perFolder}` } })),
      await measure('search_by_pk', (i) =>
        search({ item_filter: { item_type: 'payload', parent_laui: folderOf(i), name: `p-${(i * 7919) % folderLauis.length}-${i % perFolder}`, get_by_pk: true } }),
      ),
      await measure('search_children_desc', (i) => search({ item_filter: { parent_laui: folderOf(i) }, pagination: { per_page: 10, sort_order: 'desc' } })),
      await measure('search_by_type_first_page', () => search({ item_filter: { item_type: 'payload' }, pagination: { per_page: 10 } }), 30),
    ];
    return figures;
  } finally {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
