// The compiled service: esbuild bundles the TypeScript entry points into dist/ (npm start runs
// `node dist/main.js`, not tsx). Plain JavaScript, so that the check at every start (prestart) costs
// a hash of the sources and no TypeScript loader. `node ops/build/buildService.mjs [--force] [--out DIR]`.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const DIST = join(ROOT, 'dist');
const STAMP = '.source-hash';

/** Bundles: the service, the CLI, the console build, and the SQLite store's two worker threads. */
const ENTRIES = {
  main: 'ops/main.ts',
  cli: 'ops/cli.ts',
  buildConsole: 'ops/console/buildConsole.ts',
  writerThread: 'ops/event-store/sqlite/writerThreadMain.ts',
  checkpointerThread: 'ops/event-store/sqlite/checkpointerMain.ts',
};

/**
 * Worker threads started by URL from the sources: in the bundle they start the compiled thread
 * instead (their .mjs shims register tsx, which a compiled start must not need).
 */
const THREAD_SHIMS = {
  'ops/event-store/sqlite/writerThread.mjs': 'writerThread.js',
  'ops/event-store/sqlite/checkpointerThread.mjs': 'checkpointerThread.js',
};

const SOURCE_FOLDERS = ['command-side', 'query-side', 'projections', 'shared', 'ops'];

const sourcesUnder = async (dir) => {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name.startsWith('.') || entry.name === 'dist' || path.endsWith(`${sep}console${sep}app`) ? [] : sourcesUnder(path);
      return /\.(ts|mjs|cjs|json)$/.test(entry.name) && !entry.name.includes('.spec.') ? [path] : [];
    }),
  );
  return nested.flat();
};

/** A digest of what the bundle is made of: the sources' contents (not times, which a checkout resets), the lock file and this script. */
export const serviceSourceHash = async () => {
  const files = [...(await Promise.all(SOURCE_FOLDERS.map((folder) => sourcesUnder(join(ROOT, folder))))).flat(), join(ROOT, 'package-lock.json'), fileURLToPath(import.meta.url)].sort();
  const hash = createHash('sha256');
  for (const file of files) hash.update(relative(ROOT, file)).update('\0').update(await readFile(file)).update('\0');
  return hash.digest('hex');
};

export const builtHash = (dist) => readFile(join(dist, STAMP), 'utf8').catch(() => null);

const toUrlPath = (path) => path.split(sep).join('/');
/** Stands for the bundle's own import.meta.url while a source's mentions are rewritten. */
const BUNDLE_URL = '__bundleImportMetaUrl__';

/**
 * `import.meta.url` means the source file's own place: files beside it are read at run time (the
 * worker's runtime scripts, the native addons, docs, the console's build). In a bundle it would be
 * dist/'s, so each source's mention becomes the source file's URL, reckoned from the bundle's own
 * URL (relocatable with the checkout). A thread shim's URL becomes its compiled thread.
 */
const sourceUrls = (outDir) => ({
  name: 'source-import-meta-url',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      let contents = await readFile(args.path, 'utf8');
      if (!contents.includes('import.meta.url')) return { contents, loader: 'ts' };
      const fromDist = (target) => {
        const rel = toUrlPath(relative(outDir, target));
        return rel.startsWith('.') ? rel : `./${rel}`;
      };
      contents = contents.replace(/new URL\((['"])([^'"]+)\1, import\.meta\.url\)/g, (whole, _quote, spec) => {
        const target = resolve(dirname(args.path), spec);
        const thread = THREAD_SHIMS[toUrlPath(relative(ROOT, target))];
        const path = thread ? `./${thread}` : fromDist(target) + (spec.endsWith('/') ? '/' : '');
        return `new URL(${JSON.stringify(path)}, ${BUNDLE_URL})`;
      });
      contents = contents.replace(/import\.meta\.url/g, `new URL(${JSON.stringify(fromDist(args.path))}, ${BUNDLE_URL}).href`);
      return { contents: contents.replaceAll(BUNDLE_URL, 'import.meta.url'), loader: 'ts' };
    });
  },
});

/**
 * Builds dist/ when it is missing or was built from other sources; a no-op otherwise. Builds into a
 * fresh folder and swaps it in, so a service starting meanwhile never loads half a build.
 */
export const ensureServiceBuilt = async ({ force = false, outDir = DIST } = {}) => {
  const started = performance.now();
  const hash = await serviceSourceHash();
  if (!force && (await builtHash(outDir)) === hash) return { built: false, outDir, seconds: (performance.now() - started) / 1000 };
  const staging = await mkdtemp(`${outDir}-build-`);
  try {
    await build({
      absWorkingDir: ROOT,
      entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, path]) => [name, join(ROOT, path)])),
      outdir: staging,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // node_modules stay where they are: native addons, optional peers and dynamic requires.
      packages: 'external',
      sourcemap: 'linked',
      // Every file of the bundle in dist/ itself: the source URLs are reckoned from there.
      chunkNames: '[name]-[hash]',
      logLevel: 'warning',
      // Built into `staging`, served from `outDir`: reckon source URLs from where the files will be.
      plugins: [sourceUrls(outDir)],
      banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    });
    await writeFile(join(staging, 'package.json'), '{"type":"module"}\n');
    await writeFile(join(staging, STAMP), hash);
    const old = `${staging}-old`;
    await rename(outDir, old).catch(() => undefined);
    try {
      await rename(staging, outDir);
    } catch (error) {
      // Another build swapped its folder in meanwhile: keep it when it is of the same sources.
      if ((await builtHash(outDir)) !== hash) throw error;
    }
    await rm(old, { recursive: true, force: true });
    return { built: true, outDir, seconds: (performance.now() - started) / 1000 };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const outIndex = process.argv.indexOf('--out');
  const outDir = outIndex > 0 ? resolve(process.argv[outIndex + 1]) : DIST;
  ensureServiceBuilt({ force: process.argv.includes('--force'), outDir }).then(
    (result) => {
      if (result.built) console.log(`Service built into ${relative(process.cwd(), result.outDir) || '.'} in ${result.seconds.toFixed(1)} s`);
    },
    (error) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
