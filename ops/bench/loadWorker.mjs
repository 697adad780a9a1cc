// Load generator worker (plain JavaScript: worker threads do not inherit the tsx loader).
// Receives a LoadSpec (see loadGenerator.ts) and posts back throughput and latency percentiles.
import { parentPort, workerData } from 'node:worker_threads';
import { Agent, request } from 'undici';

const spec = workerData;
const agent = new Agent({ connections: spec.concurrency, pipelining: 1, keepAliveTimeout: 30_000 });
const latencies = [];
let errors = 0;
let counter = 0;
const deadline = performance.now() + spec.seconds * 1000;

const one = async () => {
  const index = counter++;
  const path = spec.paths ? spec.paths[index % spec.paths.length] : '';
  const body = spec.bodyTemplate?.replaceAll('{{n}}', String(index));
  const started = performance.now();
  const response = await request(spec.url + path, { method: spec.method, headers: spec.headers, body, dispatcher: agent });
  await response.body.dump();
  latencies.push(performance.now() - started);
  if (response.statusCode >= 300) errors += 1;
};

const loop = async () => {
  while (performance.now() < deadline) await one();
};

const started = performance.now();
await Promise.all(Array.from({ length: spec.concurrency }, loop));
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (p) => Number((latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN).toFixed(2));
parentPort.postMessage({ requests: latencies.length, errors, seconds, perSecond: Math.round(latencies.length / seconds), p50: at(0.5), p99: at(0.99) });
await agent.close();
