import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { systemProgram } from '../../../ops/worker/systemPrograms.ts';

const SCRIPT = fileURLToPath(new URL('../../../.ci/mongo-double', import.meta.url));
const run = promisify(execFile);

export interface MongoDouble {
  url: string;
  /** Stops the double if this call started it; leaves one that was already running. */
  release(): Promise<void>;
}

/** Exit status of .ci/mongo-double when Java or Maven is missing. */
const MISSING_TOOLS = 3;

/**
 * The MongoDB wire-protocol double (mongo-java-server), started by .ci/mongo-double unless one
 * runs: a stand-in for tests, NOT MongoDB. Resolves null with the reason when Java or Maven is
 * missing; any other failure throws.
 */
export const startMongoDouble = async (): Promise<MongoDouble | { missing: string }> => {
  try {
    const { stdout } = await run(systemProgram('bash'), [SCRIPT, 'start'], { timeout: 300_000 });
    const [state, url] = stdout.trim().split(/\s+/).slice(-2);
    if (!url) throw new Error(`.ci/mongo-double start printed no url: ${stdout}`);
    return {
      url,
      release: async () => {
        if (state === 'started') await run(systemProgram('bash'), [SCRIPT, 'stop']);
      },
    };
  } catch (error) {
    const failed = error as { code?: unknown; stderr?: unknown };
    if (failed.code === MISSING_TOOLS) return { missing: String(failed.stderr).trim() };
    throw error;
  }
};

/**
 * Call in a `before` hook: the running double, or the suite skipped with the reason printed when
 * Java or Maven is missing; under CI=true that fails instead (CI must run the double's suites).
 */
export async function requireMongoDouble(context: Mocha.Context): Promise<MongoDouble> {
  const started = await startMongoDouble();
  if (!('missing' in started)) return started;
  if (process.env.CI === 'true') throw new Error(`CI=true and the MongoDB double cannot start: ${started.missing}`);
  console.log(`      skipped: ${started.missing}`);
  context.skip();
}
