import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { metadataFor, type EventToAppend } from '../shared/events.ts';
import { START } from '../shared/event-store/EventStore.ts';
import { EventStreams } from '../query-side/events/EventStreams.ts';
import { openSqliteEventStore } from '../ops/event-store/sqlite/SqliteEventStore.ts';
import { mainThreadCpuMs } from './runInterleaved.ts';

/**
 * An SSE consumer: splits frames and parses each data line, then reports how many it read. One
 * reader serves every run (a 'go' per run), so its code is as warm in the measured runs as the
 * direct read's: a new worker per run compiled it anew each time.
 */
const SSE_READER = `
const { request } = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { port, total } = workerData;
parentPort.on('message', () => {
  let buffer = '';
  let received = 0;
  let reported = false;
  const report = () => {
    if (reported) return;
    reported = true;
    parentPort.postMessage(received);
  };
  const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk) => {
      const frames = (buffer + chunk).split('\\n\\n');
      buffer = frames.pop();
      for (const frame of frames) {
        const data = frame.indexOf('\\ndata: ');
        if (data < 0) continue;
        JSON.parse(frame.slice(data + 7));
        received += 1;
      }
      if (received >= total) {
        report();
        req.destroy();
      }
    });
    res.on('close', report);
  });
  req.on('error', report);
  req.end();
});
parentPort.postMessage('ready');
`;

/**
 * GET /api/v1/events/stream against reading the store directly, same log, same run. The log holds
 * item-like events (~0.6 KB: fields, access maps, a sealed connection content every tenth event),
 * so redaction has real work. The SSE side is EventStreams behind a bare HTTP server (the route adds
 * one token check per connection, nothing per event) and a client on a worker thread that splits
 * frames and parses every data line, as an analyst's consumer would.
 */
export async function benchEvents(opts: { dir: string; events?: number }): Promise<Array<Record<string, unknown>>> {
  const total = opts.events ?? 100_000;
  const store = openSqliteEventStore({ file: join(opts.dir, 'events-stream.sqlite'), synchronous: 'normal' });
  await store.writerReady();
  const meta = metadataFor('65a000000000000000000001', new Date('2026-01-01T00:00:00Z'), 'bench');
  const sealed = { $sealed: { v: 1, iv: 'aXY', tag: 'dGFn', ct: 'Y2lwaGVydGV4dA'.repeat(8) }, keys: ['host', 'password'], shown: { host: 'db', password: '********' } };
  const pending: Array<Promise<unknown>> = [];
  for (let index = 0; index < total; index += 10) {
    const laui = `65b${index.toString(16).padStart(21, '0')}`;
    const events: EventToAppend[] = Array.from({ length: Math.min(10, total - index) }, (_, offset) => ({
      type: offset === 0 ? 'ItemCreated' : 'ItemUpdated',
      data:
        offset === 0
          ? {
              laui,
              item_type: 'connection',
              name: `conn-${index}`,
              parent_laui: '65a000000000000000000002',
              parent_type: 'folder.connection',
              link_laui: '65a000000000000000000003',
              is_root: false,
              fields: { content: sealed, max_parallelism: 4, description: 'a connection used by the benchmark' },
              access: { owners: { '65a000000000000000000001': 'true' }, editors: {}, viewers: {} },
              version: 1,
              revision_laui: '65a000000000000000000004',
            }
          : { changes: { description: `revision ${offset} of a connection used by the benchmark`, state: 'success', tags: ['a', 'b'] }, version: offset + 1, revision_laui: null },
      metadata: meta,
    }));
    pending.push(store.append(`item-${laui}`, events, 'no_stream'));
    if (pending.length >= 500) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);

  const direct = async (): Promise<number> => {
    const started = process.hrtime.bigint();
    let after = START;
    let read = 0;
    for (;;) {
      const page = await store.readAll({ after, maxCount: 1000 });
      if (page.length === 0) break;
      read += page.length;
      after = page[page.length - 1]?.position ?? after;
    }
    if (read !== total) throw new Error(`direct read ${read} of ${total}`);
    return Number(process.hrtime.bigint() - started) / 1e9;
  };

  const streams = new EventStreams({ eventStore: store, settings: { heartbeatMs: 60_000, slowClientMs: 60_000, shares: { total: 10_000, perUser: 10_000 } } });
  const server = createServer((_req, res) => streams.serve(res, START, {}, 'bench'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  // The reader is another program: a worker thread here, so that its parsing does not share the
  // server's event loop (as a consumer on another core would not). Started (and its start-up paid)
  // before any clock runs; no loader hooks in it.
  const reader = new Worker(SSE_READER, { eval: true, workerData: { port, total }, execArgv: [] });
  await new Promise<void>((resolve, reject) => {
    reader.once('message', () => resolve());
    reader.once('error', reject);
  });
  const sse = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const started = process.hrtime.bigint();
      reader.once('error', reject);
      reader.once('message', (received: number) => {
        reader.off('error', reject);
        if (received !== total) reject(new Error(`SSE read ${received} of ${total}`));
        else resolve(Number(process.hrtime.bigint() - started) / 1e9);
      });
      reader.postMessage('go');
    });

  // Warm both paths once (page cache, JIT), then alternate, A B B A A B, so that a spell of load on
  // this machine falls on both sides: each figure is the best of its three runs.
  await direct();
  await sse();
  const seconds = { direct: [] as number[], sse: [] as number[] };
  const cpuMs = { direct: 0, sse: 0 };
  for (const side of ['direct', 'sse', 'sse', 'direct', 'direct', 'sse'] as const) {
    const cpuBefore = mainThreadCpuMs();
    seconds[side].push(await (side === 'direct' ? direct() : sse()));
    cpuMs[side] += mainThreadCpuMs() - cpuBefore;
  }
  await reader.terminate();
  streams.closeAll();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await store.close();

  const best = (values: number[]): number => Math.min(...values);
  const directRate = total / best(seconds.direct);
  const sseRate = total / best(seconds.sse);
  const ratio = sseRate / directRate;
  // Main-thread CPU per event: the server's side of the stream (the reader's parsing is on its own
  // thread) against the direct read's. Unlike events/s, it hardly moves when other processes
  // compete for the two cores, which cost the stream more (it needs a core for its reader too).
  const cpuUsPerEvent = (side: 'direct' | 'sse'): number => Number(((cpuMs[side] * 1000) / (seconds[side].length * total)).toFixed(2));
  const perRun = (side: 'direct' | 'sse'): number[] => seconds[side].map((run) => Math.round(total / run));
  return [
    {
      figure: 'events.sse.read',
      value: Math.round(sseRate),
      unit: 'events/s',
      events: total,
      baseline: 'events.store.readAll in the same run',
      baselineValue: Math.round(directRate),
      ratio: Number(ratio.toFixed(2)),
      rounds: { sse: perRun('sse'), direct: perRun('direct') },
      main_thread: {
        sse_cpu_us_per_event: cpuUsPerEvent('sse'),
        direct_cpu_us_per_event: cpuUsPerEvent('direct'),
        cpu_ratio: Number((cpuUsPerEvent('direct') / cpuUsPerEvent('sse')).toFixed(2)),
      },
      target: '>= 0.5 of the direct read',
      pass: ratio >= 0.5,
    },
    { figure: 'events.store.readAll', value: Math.round(directRate), unit: 'events/s', events: total, baseline: 'itself (the reference for events.sse.read)' },
  ];
}
