// graphile-worker's runner for bench/peerBench.ts, in its own process as a deployment runs it: a
// no-op task. argv: connection string, concurrency. Says 'ready' once running; stops on 'stop'.
import { run } from 'graphile-worker';

const [connectionString, concurrency] = process.argv.slice(2);
const runner = await run({
  connectionString,
  concurrency: Number(concurrency),
  // Its own warning: a pool smaller than the concurrency is not optimal.
  maxPoolSize: Math.max(10, Number(concurrency)),
  noHandleSignals: true,
  taskList: { noop: async () => {} },
});
process.send?.('ready');
process.on('message', async (message) => {
  if (message !== 'stop') return;
  await runner.stop();
  process.exit(0);
});
