import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { extname, join } from 'node:path';
import Router from '@koa/router';
import type { AppContext, AppState } from '../../shared/http/AppState.ts';
import { CONSOLE_DIST } from './consolePaths.ts';

export interface ConsoleRoutesOptions {
  /** The built console (index.html and assets/); default ops/console/dist. */
  distDir?: string;
}

/** Hashed file names only: nothing else under /console/assets/ maps to a file (no `..`, no folders). */
const ASSET = /^\/console\/assets\/([A-Za-z0-9][A-Za-z0-9._-]*)$/;
const NONCE_PLACEHOLDER = '__CSP_NONCE__';
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The page's policy: scripts and styles from the console's own files only (no inline script at all),
 * plus <style> elements carrying this response's nonce (the code editor writes its theme into one);
 * requests only to this origin (the REST API and its event streams); no framing, no plugins.
 */
export const consolePolicy = (nonce: string): string =>
  [
    "default-src 'self'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');

const commonHeaders = (ctx: AppContext): void => {
  ctx.set('X-Content-Type-Options', 'nosniff');
  // The callback URL carries the sign-in code until the page replaces it: it never goes out as a referrer.
  ctx.set('Referrer-Policy', 'no-referrer');
};

const notBuilt = (ctx: AppContext): void => {
  ctx.status = 503;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { detail: 'The web console is not built: run `npm run console:build` (npm start builds it)' };
};

/**
 * The web console (ops/console/app, built by Vite into ops/console/dist): index.html at `/` and at
 * every client route under /console/ (the app routes in the page), the hashed assets under
 * /console/assets/ with a year's immutable cache (gzip-encoded when the build left a .gz beside
 * them and the client takes gzip). index.html is never cached: it names the current assets and
 * carries a fresh CSP nonce on every response.
 */
export const consoleRoutes = (options: ConsoleRoutesOptions = {}): Router<AppState> => {
  const dist = options.distDir ?? CONSOLE_DIST;
  const router = new Router<AppState>();

  const serveIndex = async (ctx: AppContext): Promise<void> => {
    let html: string;
    try {
      html = await readFile(join(dist, 'index.html'), 'utf8');
    } catch {
      notBuilt(ctx);
      return;
    }
    const nonce = randomBytes(16).toString('base64');
    commonHeaders(ctx);
    ctx.set('Content-Security-Policy', consolePolicy(nonce));
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html.replaceAll(NONCE_PLACEHOLDER, nonce);
  };

  const serveAsset = async (ctx: AppContext, name: string): Promise<void> => {
    const file = join(dist, 'assets', name);
    const gzip = ctx.acceptsEncodings('gzip', 'identity') === 'gzip';
    const candidates = gzip ? [`${file}.gz`, file] : [file];
    for (const candidate of candidates) {
      const found = await stat(candidate).catch(() => null);
      if (!found?.isFile()) continue;
      commonHeaders(ctx);
      ctx.set('Cache-Control', IMMUTABLE);
      ctx.vary('Accept-Encoding');
      if (candidate !== file) ctx.set('Content-Encoding', 'gzip');
      ctx.type = extname(name);
      ctx.length = found.size;
      ctx.body = createReadStream(candidate);
      return;
    }
    // A stale page asking for an asset of an older build: 404, never index.html under a .js name.
    ctx.status = 404;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { detail: 'Not Found' };
  };

  router.get('/', serveIndex);
  // /console and everything below it: a hashed asset, or a client route of the single-page app.
  router.get('/console{/*path}', async (ctx) => {
    const asset = ASSET.exec(ctx.path);
    if (asset) await serveAsset(ctx, asset[1] as string);
    else if (ctx.path.startsWith('/console/assets/')) {
      ctx.status = 404;
      ctx.body = { detail: 'Not Found' };
    } else await serveIndex(ctx);
  });
  return router;
};
