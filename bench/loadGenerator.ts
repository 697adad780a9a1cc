import { Worker } from 'node:worker_threads';

export interface LoadResult {
  requests: number;
  /** With awaitField: pieces of work finished (more than requests when the field is an array). */
  completed?: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Every request's latency in ms, ascending, when the spec asked for them. */
  latencies?: Float64Array;
}

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** Bodies are made in the worker from this template: `{{n}}` becomes a unique counter. */
  bodyTemplate?: string;
  /** Bodies instead, dealt out to the clients (client c gets every body whose index % concurrency is c), each cycling through its own. */
  bodies?: string[];
  /** Paths to cycle through for GETs (appended to url). */
  paths?: string[];
  concurrency: number;
  seconds: number;
  /**
   * A field of the JSON answer naming work the request started (a task's LAUI, or an array of
   * `{task_laui}`): the request counts, and its slot sends the next one, only once `completed`
   * resolves for each value.
   */
  awaitField?: string;
  /** Return every latency (to merge percentiles over several runs). */
  keepLatencies?: boolean;
}

/**
 * Drives HTTP load from a worker thread, so the generator runs on the other core and does not
 * share the server's event loop. Returns throughput and latency percentiles in milliseconds.
 */
export const runLoad = (spec: LoadSpec, completed?: (value: string) => Promise<void>): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./loadWorker.mjs', import.meta.url), { workerData: spec });
    worker.on('message', (message: (LoadResult & { result: true }) | { awaiting: string[]; key: number }) => {
      if ('result' in message) {
        resolve(message);
        return;
      }
      if (!completed) throw new Error('runLoad: awaitField needs a completed callback');
      void Promise.all(message.awaiting.map(completed)).then(() => worker.postMessage({ done: message.key }), reject);
    });
    worker.once('error', reject);
  });
