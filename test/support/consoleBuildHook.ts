import { ensureConsoleBuilt } from '../../ops/console/buildConsole.ts';

/**
 * Mocha root hook (.mocharc.json `require`): the web console is built once before any spec, when
 * its sources changed since the last build (a no-op otherwise), so that every spec that starts the
 * service finds GET / served, as `npm start` (prestart) leaves it.
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(300_000);
    const result = await ensureConsoleBuilt();
    if (result.built) console.log(`  (web console built in ${result.seconds.toFixed(1)} s)`);
  },
};
