import { AppError } from '../shared/errors.ts';
import { cliProgram } from './cli/cliProgram.ts';

/** `npm run cli -- <command>`: the operator commands of ops/cli/cliProgram.ts. */
cliProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    const message = error instanceof AppError ? `${error.status}: ${JSON.stringify(error.detail)}` : error instanceof Error ? error.message : String(error);
    console.error(`error: ${message}`);
    process.exit(1);
  });
