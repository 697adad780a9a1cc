// `npm start`'s prestart: the compiled service (dist/) and the web console, each rebuilt only when
// its sources changed (a hash of them: a no-op start pays well under a second, and no TypeScript
// loader). `npm ci` has built both already (the prepare script), unless the sources changed since.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DIST, ROOT, ensureServiceBuilt } from './buildService.mjs';

const main = async () => {
  // `npm ci` in the Docker image's first layer runs before the sources are copied: nothing to build yet.
  if (process.argv.includes('--if-sources') && !existsSync(join(ROOT, 'ops', 'main.ts'))) return;
  const service = await ensureServiceBuilt();
  if (service.built) console.log(`Service compiled into dist/ in ${service.seconds.toFixed(1)} s`);
  // The console is not the service: a build that fails (no dev dependencies) says why, and the
  // service starts anyway (GET / answers 503 saying the console is not built).
  try {
    const { ensureConsoleBuilt } = await import(pathToFileURL(join(DIST, 'buildConsole.js')).href);
    const built = await ensureConsoleBuilt();
    if (built.built) console.log(`Web console built in ${built.seconds.toFixed(1)} s`);
  } catch (error) {
    console.error(`The web console was not built: ${error instanceof Error ? error.message : String(error)} (npm run console:build; it needs the dev dependencies)`);
  }
};

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
