import { Command, Option } from 'commander';
import { loadConfig, parseRole, ROLES } from './config.ts';
import { installProcessGuard } from './processGuard.ts';
import { startService } from './service.ts';

/**
 * `npm start [-- --role api|projector|worker|scheduler|all]`: the service, or one role of it
 * (ops/roles.ts), stopped cleanly by SIGINT/SIGTERM. `--role` wins over ROLE. Once it runs, the
 * process guard (processGuard.ts) keeps an uncaught error of one connection from ending it.
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
