// Load generator worker (plain JavaScript: worker threads do not inherit the tsx loader).
// Receives a LoadSpec (see loadGenerator.ts) and posts back throughput and latency percentiles.
import { parentPort, workerData } from 'node:worker_threads';
import { Agent, request } from 'undici';

const spec = workerData;
const agent = new Agent({ connections: spec.concurrency, pipelining: 1, keepAliveTimeout: 30_000 });
const latencies = [];
let errors = 0;
let counter = 0;
// Pieces of work finished (one per request, or one per array entry of awaitField).
let completed = 0;
const deadline = performance.now() + spec.seconds * 1000;

// With `awaitField`, a request counts once the main thread says the work it started is done: the
// field of the JSON answer (a task's LAUI) is posted up, and this slot waits for it to come back.
const waiting = new Map();
// Listening keeps the port (and so this thread) alive: only when needed, and closed at the end.
if (spec.awaitField) {
  parentPort.on('message', (message) => {
    waiting.get(message.done)?.();
    waiting.delete(message.done);
  });
}
// One message per request both ways, however many tasks it started (a batch names 16).
let nextKey = 0;
const completion = (values) =>
  new Promise((resolve) => {
    const key = nextKey++;
    waiting.set(key, resolve);
    parentPort.postMessage({ awaiting: values, key });
  });

const one = async (own) => {
  const index = counter++;
  const path = spec.paths ? spec.paths[index % spec.paths.length] : '';
  const body = own ? own.next() : spec.bodyTemplate?.replaceAll('{{n}}', String(index));
  const started = performance.now();
  const response = await request(spec.url + path, { method: spec.method, headers: spec.headers, body, dispatcher: agent });
  if (spec.awaitField && response.statusCode < 300) {
    const value = (await response.body.json())[spec.awaitField];
    // An array names several pieces of work (multiple_tasks: [{task_laui}]): each is awaited and counted.
    const values = Array.isArray(value) ? value.map((entry) => String(entry?.task_laui ?? entry)) : [String(value)];
    await completion(values);
    completed += values.length;
  } else {
    await response.body.dump();
  }
  latencies.push(performance.now() - started);
  if (response.statusCode >= 300) errors += 1;
};

// `bodies` are dealt out to the clients, each cycling through its own: a body (a batch of tasks) is
// never sent again while it is still in flight, which a shared cycle allows once a slow request is
// overtaken (the second send would find its tasks still queued, and they run once).
const ownBodies = (client) => {
  if (!spec.bodies) return null;
  const own = spec.bodies.filter((_, index) => index % spec.concurrency === client);
  if (own.length === 0) throw new Error(`loadWorker: ${spec.bodies.length} bodies for ${spec.concurrency} clients`);
  let at = 0;
  return { next: () => own[at++ % own.length] };
};

const loop = async (client) => {
  const own = ownBodies(client);
  while (performance.now() < deadline) await one(own);
};

const started = performance.now();
await Promise.all(Array.from({ length: spec.concurrency }, (_, client) => loop(client)));
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (p) => Number((latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN).toFixed(2));
parentPort.postMessage({
  result: true,
  requests: latencies.length,
  completed,
  errors,
  seconds,
  perSecond: Math.round(latencies.length / seconds),
  p50: at(0.5),
  p99: at(0.99),
  ...(spec.keepLatencies ? { latencies: Float64Array.from(latencies) } : {}),
});
await agent.close();
parentPort.close();
