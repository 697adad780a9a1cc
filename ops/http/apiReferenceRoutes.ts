import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import Router from '@koa/router';
import { notFound } from '../../shared/errors.ts';
import type { AppContext, AppState } from '../../shared/http/AppState.ts';
import type { RouteDocs } from '../../shared/http/routeDocs.ts';
import { API_DOCS_PATH, DOCS_ASSETS, OPENAPI_JSON_PATH } from './apiReferenceAssets.ts';
import { API_ROUTE_DOCS, apiInfo } from './apiRouteDocs.ts';
import { openApiDocument, type ApiInfo } from './openApiDocument.ts';

const gzipped = promisify(gzip);

/** A response built once: its bytes, their gzip form when that is worth it, and a validator. */
interface Served {
  type: string;
  body: Buffer;
  gzip: Buffer | null;
  /** Weak: the gzip and identity forms share it. */
  etag: string;
  /** A short hash of the body, for the page's versioned asset URLs. */
  version: string;
}

const served = async (type: string, body: Buffer): Promise<Served> => {
  const hash = createHash('sha256').update(body).digest('base64url');
  const compressible = !type.startsWith('image/') && body.length > 1024;
  return { type, body, gzip: compressible ? await gzipped(body) : null, etag: `W/"${hash.slice(0, 27)}"`, version: hash.slice(0, 12) };
};

/**
 * The reference page's policy: its own scripts only, no inline script; inline styles are allowed
 * because the viewer sets some. Nothing is loaded or fetched from another origin.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeAttribute = (text: string): string => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

const page = (assetUrl: (name: string) => string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Pipeline orchestration service: API reference</title>
<link rel="stylesheet" href="${assetUrl('swagger-ui.css')}">
<link rel="stylesheet" href="${assetUrl('index.css')}">
<link rel="icon" type="image/png" href="${assetUrl('favicon-32x32.png')}" sizes="32x32">
<link rel="icon" type="image/png" href="${assetUrl('favicon-16x16.png')}" sizes="16x16">
</head>
<body>
<div id="swagger-ui" data-url="${escapeAttribute(OPENAPI_JSON_PATH)}"></div>
<script src="${assetUrl('swagger-ui-bundle.js')}"></script>
<script src="${assetUrl('swagger-ui-standalone-preset.js')}"></script>
<script src="${assetUrl('init.js')}"></script>
</body>
</html>
`;

/** Sends `what` with its validator; a matching If-None-Match gets 304, a client taking gzip the gzip form. */
const send = (ctx: AppContext, what: Served, cacheControl: string): void => {
  ctx.set('Cache-Control', cacheControl);
  ctx.set('ETag', what.etag);
  ctx.set('Vary', 'Accept-Encoding');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.status = 200;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.type = what.type;
  if (what.gzip !== null && ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
    ctx.set('Content-Encoding', 'gzip');
    ctx.body = what.gzip;
  } else {
    ctx.body = what.body;
  }
};

/** Built at the first request, then kept; a failure is not kept, so the next request tries again. */
const once = <T>(build: () => Promise<T>): (() => Promise<T>) => {
  let built: Promise<T> | null = null;
  return () => {
    built ??= build().catch((error: unknown) => {
      built = null;
      throw error;
    });
    return built;
  };
};

/**
 * GET /api/v1/openapi.json (the OpenAPI 3.1 document of every route, from the routes' own docs),
 * GET /api/v1/docs (a browsable reference: swagger-ui-dist, served from node_modules) and the
 * page's assets. Public, no token: they describe the API, not its data.
 */
export const apiReferenceRoutes = (options: { docs?: ReadonlyArray<RouteDocs>; info?: () => ApiInfo } = {}): Router<AppState> => {
  const router = new Router<AppState>();
  const documentJson = once(async () => served('application/json; charset=utf-8', Buffer.from(JSON.stringify(openApiDocument(options.docs ?? API_ROUTE_DOCS, (options.info ?? apiInfo)())))));
  const assets = once(async () => {
    const loaded = new Map<string, Served>();
    for (const [name, asset] of Object.entries(DOCS_ASSETS)) loaded.set(name, await served(asset.type, await readFile(asset.file())));
    const docsPage = await served('text/html; charset=utf-8', Buffer.from(page((name) => `${API_DOCS_PATH}/${name}?v=${loaded.get(name)?.version ?? ''}`)));
    return { loaded, docsPage };
  });

  router.get(OPENAPI_JSON_PATH, async (ctx) => {
    send(ctx, await documentJson(), 'no-cache');
  });

  router.get(API_DOCS_PATH, async (ctx) => {
    const { docsPage } = await assets();
    send(ctx, docsPage, 'no-cache');
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Frame-Options', 'DENY');
  });

  router.get(`${API_DOCS_PATH}/:asset`, async (ctx) => {
    const name = ctx.params.asset ?? '';
    if (!Object.hasOwn(DOCS_ASSETS, name)) throw notFound('No such asset');
    const asset = (await assets()).loaded.get(name);
    if (asset === undefined) throw notFound('No such asset');
    // The page names each asset with its content's hash: that URL never changes meaning.
    send(ctx, asset, ctx.query.v === asset.version ? 'public, max-age=31536000, immutable' : 'no-cache');
  });

  return router;
};
