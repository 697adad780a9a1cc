import { Command, Option } from 'commander';
import { loadConfig, parseRole, ROLES } from './config.ts';
import { installProcessGuard } from './processGuard.ts';
import { startService } from './service.ts';

/**
 * `npm start [-- --role api|projector|worker|scheduler|all]`: the service, or one role of it
 * (ops/roles.ts), stopped by SIGINT/SIGTERM within SHUTDOWN_GRACE_SECONDS (a second signal: at
 * once). `--role` wins over ROLE. Once it runs, the process guard (processGuard.ts) keeps an
 * uncaught error of one connection from ending it.
 */
const main = async () => {
  const program = new Command('npm start --')
    .addOption(new Option('--role <role>', 'what this process runs').choices(ROLES))
    .allowExcessArguments(false)
    .parse(process.argv);
  const { role } = program.opts<{ role?: string }>();
  const config = loadConfig(role === undefined ? process.env : { ...process.env, ROLE: parseRole(role, '--role') });
  console.log(`Starting role ${config.role} on http://${config.host}:${config.port} with DATA_DIR=${config.dataDir}`);
  const service = await startService(config);
  // One client's broken stream must not end the process for everyone (see processGuard.ts for what
  // it survives and what still ends the process).
  installProcessGuard({ process, logger: service.logger, exit: (code) => process.exit(code) });
  console.log(`Ready: ${service.url} (GET /healthz); web console: ${service.url}/`);
  if (service.metricsUrl !== null) console.log(`Metrics (METRICS_PORT, this host only): ${service.metricsUrl}`);
  // The first signal stops taking work and waits at most SHUTDOWN_GRACE_SECONDS for what was taken,
  // saying what it waits for (README, Operations: Stop); a second one kills the runs and exits at once.
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      console.log(`${signal} received again: stopping at once; runs killed, their tasks are left to the lease reaper at the next start`);
      service.abort();
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }
    stopping = true;
    console.log(`${signal} received, stopping: no new work is taken (another SIGINT or SIGTERM stops at once)`);
    service.shutdown({ report: (line) => console.log(line) }).then(
      () => {
        console.log('Stopped');
        process.exit(0);
      },
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
