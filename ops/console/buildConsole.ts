import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { CONSOLE_APP, CONSOLE_DIST } from './consolePaths.ts';

const run = promisify(execFile);
const STAMP = '.source-hash';
const ROOT = join(CONSOLE_APP, '..', '..', '..');
/** What the build's output depends on besides the app's own files. */
const INPUTS_OUTSIDE_APP = [join(ROOT, 'package-lock.json')];

const filesUnder = async (dir: string): Promise<string[]> => {
  const entries = await readdir(dir, { withFileTypes: true });
  const files = await Promise.all(
    entries
      .filter((entry) => entry.name !== 'node_modules' && !entry.name.startsWith('.'))
      .map((entry) => (entry.isDirectory() ? filesUnder(join(dir, entry.name)) : Promise.resolve([join(dir, entry.name)]))),
  );
  return files.flat().sort();
};

/**
 * A digest of everything the build reads (the app's sources, config and the lock file): contents,
 * not modification times, which a checkout or a copy resets.
 */
export const consoleSourceHash = async (): Promise<string> => {
  const hash = createHash('sha256');
  for (const file of [...(await filesUnder(CONSOLE_APP)), ...INPUTS_OUTSIDE_APP]) {
    hash.update(relative(ROOT, file)).update('\0').update(await readFile(file)).update('\0');
  }
  return hash.digest('hex');
};

const builtHash = async (dist: string): Promise<string | null> => readFile(join(dist, STAMP), 'utf8').catch(() => null);

/** Beside each script and stylesheet its gzip, served to clients that take gzip (consoleRoutes). */
const precompress = async (dir: string): Promise<void> => {
  const assets = join(dir, 'assets');
  for (const name of await readdir(assets)) {
    if (!/\.(js|css|svg|json)$/.test(name)) continue;
    await writeFile(join(assets, `${name}.gz`), gzipSync(await readFile(join(assets, name)), { level: 9 }));
  }
};

export interface BuildResult {
  built: boolean;
  dist: string;
  seconds: number;
}

/**
 * Builds the console with Vite when ops/console/dist is missing or was built from other sources;
 * a no-op (a hash of ~40 small files) otherwise. Builds into a fresh folder and swaps it in, so a
 * running service never serves half a build and two builds at once (npm start beside the tests)
 * cannot mix their files.
 */
export const ensureConsoleBuilt = async (options: { force?: boolean; dist?: string } = {}): Promise<BuildResult> => {
  const started = performance.now();
  const dist = options.dist ?? CONSOLE_DIST;
  const hash = await consoleSourceHash();
  if (!options.force && (await builtHash(dist)) === hash) return { built: false, dist, seconds: 0 };
  const staging = await mkdtemp(join(dirname(dist), '.dist-build-'));
  try {
    const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js');
    await run(process.execPath, [vite, 'build', '--config', join(CONSOLE_APP, 'vite.config.ts'), '--logLevel', 'warn'], {
      cwd: CONSOLE_APP,
      env: { ...process.env, CONSOLE_OUT_DIR: staging },
      maxBuffer: 16 * 1024 * 1024,
    });
    await precompress(staging);
    await writeFile(join(staging, STAMP), hash);
    // mkdtemp made it 0700; the built files are public anyway.
    await chmod(staging, 0o755);
    const old = `${staging}-old`;
    await rename(dist, old).catch(() => undefined);
    try {
      await rename(staging, dist);
    } catch (error) {
      // Another build swapped its folder in meanwhile: keep it when it is of the same sources.
      if ((await builtHash(dist)) !== hash) throw error;
    }
    await rm(old, { recursive: true, force: true });
    return { built: true, dist, seconds: (performance.now() - started) / 1000 };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
};

// `npm start` (prestart) and `npm run console:build` (--force).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureConsoleBuilt({ force: process.argv.includes('--force') }).then(
    (result) => {
      if (result.built) console.log(`Web console built into ${relative(process.cwd(), result.dist)} in ${result.seconds.toFixed(1)} s`);
    },
    (error: unknown) => {
      // The API works without the console: say why it is missing and start anyway.
      const detail = error instanceof Error ? ((error as Error & { stderr?: string }).stderr || error.message) : String(error);
      console.error(`The web console could not be built (GET / will answer 503): ${detail}`);
    },
  );
}
