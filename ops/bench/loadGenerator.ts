import { Worker } from 'node:worker_threads';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
}

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** Bodies are made in the worker from this template: `{{n}}` becomes a unique counter. */
  bodyTemplate?: string;
  /** Paths to cycle through for GETs (appended to url). */
  paths?: string[];
  concurrency: number;
  seconds: number;
}

/**
 * Drives HTTP load from a worker thread, so the generator runs on the other core and does not
 * share the server's event loop. Returns throughput and latency percentiles in milliseconds.
 */
export const runLoad = (spec: LoadSpec): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./loadWorker.mjs', import.meta.url), { workerData: spec });
    worker.once('message', (result: LoadResult) => resolve(result));
    worker.once('error', reject);
  });
