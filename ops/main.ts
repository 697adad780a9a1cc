import { loadConfig } from './config.ts';
import { startService } from './service.ts';

/** `npm start`: the whole service on the embedded default, stopped cleanly by SIGINT/SIGTERM. */
const main = async () => {
  const config = loadConfig();
  console.log(`Starting on http://${config.host}:${config.port} with DATA_DIR=${config.dataDir}`);
  const service = await startService(config);
  console.log(`Ready: ${service.url} (GET /healthz); web console: ${service.url}/`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal} received, stopping`);
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
};

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
