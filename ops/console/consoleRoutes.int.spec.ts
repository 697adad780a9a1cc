import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import Koa from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';
import { consoleRoutes } from './consoleRoutes.ts';
import { ensureConsoleBuilt } from './buildConsole.ts';
import { rawRequest } from '../../test/support/rawRequest.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { recordedFetch } from '../../test/support/trafficRecorder.ts';

const INDEX = '<!doctype html><meta name="csp-nonce" content="__CSP_NONCE__"><script type="module" src="/console/assets/app-1a2b.js"></script>';
const SCRIPT = 'export const answer = 42;\n'.repeat(50);

const serve = async (dist: string): Promise<{ url: string; server: Server }> => {
  const app = new Koa<AppState>();
  const router = consoleRoutes({ distDir: dist });
  app.use(router.routes()).use(router.allowedMethods());
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
};

const nonceOf = (policy: string): string | undefined => /'nonce-([^']+)'/.exec(policy)?.[1];

describe('console routes (the built web console served by Koa)', () => {
  let dist: string;
  let site: { url: string; server: Server };

  before(async () => {
    dist = mkdtempSync(join(tmpdir(), 'console-dist-'));
    mkdirSync(join(dist, 'assets'));
    writeFileSync(join(dist, 'index.html'), INDEX);
    writeFileSync(join(dist, 'assets', 'app-1a2b.js'), SCRIPT);
    writeFileSync(join(dist, 'assets', 'app-1a2b.js.gz'), gzipSync(SCRIPT));
    writeFileSync(join(dist, 'assets', 'app-1a2b.css'), 'body{margin:0}');
    writeFileSync(join(dist, 'secret.txt'), 'not an asset');
    site = await serve(dist);
  });

  after(async () => {
    await new Promise((resolve) => site.server.close(resolve));
    rmSync(dist, { recursive: true, force: true });
  });

  it('given the built console, when / is requested, then index.html comes with a strict CSP whose fresh nonce is the one in the page, never cached', async () => {
    const first = await fetch(`${site.url}/`);
    const second = await fetch(`${site.url}/`);
    const policy = first.headers.get('content-security-policy') ?? '';
    const html = await first.text();
    expect(first.status).to.equal(200);
    expect(first.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(first.headers.get('cache-control')).to.equal('no-store');
    expect(first.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(first.headers.get('referrer-policy')).to.equal('no-referrer');
    expect(policy).to.include("script-src 'self';").and.include("connect-src 'self'").and.include("frame-ancestors 'none'").and.include("object-src 'none'");
    expect(policy).not.to.include('unsafe-inline');
    expect(policy).not.to.include('unsafe-eval');
    const nonce = nonceOf(policy);
    expect(nonce).to.match(/^[A-Za-z0-9+/]{22}==$/);
    expect(html).to.include(`content="${nonce}"`).and.not.include('__CSP_NONCE__');
    expect(nonceOf(second.headers.get('content-security-policy') ?? '')).to.not.equal(nonce);
  });

  it('given a client route under /console/, when it is requested (a reload, a shared link), then index.html answers it', async () => {
    for (const path of ['/console', '/console/', '/console/item/65a0000000000000000000aa', '/console/callback?code=abc&state=x']) {
      const reply = await fetch(`${site.url}${path}`);
      expect(reply.status, path).to.equal(200);
      expect(await reply.text(), path).to.include('/console/assets/app-1a2b.js');
    }
    const head = await fetch(`${site.url}/`, { method: 'HEAD' });
    expect(head.status).to.equal(200);
  });

  it('given a hashed asset, when it is requested, then it comes with its content type, a year of immutable cache, and gzip to a client that takes it', async () => {
    const gzipped = await rawRequest(site.url, { method: 'GET', path: '/console/assets/app-1a2b.js', headers: [['Accept-Encoding', 'gzip']] });
    expect(gzipped.status).to.equal(200);
    expect(gzipped.head).to.match(/content-encoding: gzip/i).and.match(/vary: accept-encoding/i).and.match(/cache-control: public, max-age=31536000, immutable/i);
    expect(gzipped.head).to.match(/content-type: (text|application)\/javascript; charset=utf-8/i);
    const plain = await fetch(`${site.url}/console/assets/app-1a2b.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).to.equal(null);
    expect(await plain.text()).to.equal(SCRIPT);
    const viaFetch = await fetch(`${site.url}/console/assets/app-1a2b.js`);
    expect(await viaFetch.text(), 'fetch decodes the gzip to the same script').to.equal(SCRIPT);
    const css = await fetch(`${site.url}/console/assets/app-1a2b.css`);
    expect(css.headers.get('content-type')).to.equal('text/css; charset=utf-8');
  });

  it('given a missing asset or a path out of the assets folder, when requested, then 404 (never index.html under a script name)', async () => {
    for (const path of ['/console/assets/app-0000.js', '/console/assets/', '/console/assets/sub/app.js', '/console/assets/%2e%2e/secret.txt', '/console/assets/..%2fsecret.txt', '/console/assets/.hidden']) {
      const reply = await rawRequest(site.url, { method: 'GET', path });
      expect(reply.status, path).to.equal(404);
      expect(reply.body, path).not.to.include('not an asset').and.not.include('<!doctype');
    }
  });

  it('given no build, when / is requested, then 503 says how to build the console', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'console-empty-'));
    const bare = await serve(empty);
    try {
      const reply = await fetch(`${bare.url}/`);
      expect(reply.status).to.equal(503);
      expect(((await reply.json()) as { detail: string }).detail).to.include('npm run console:build');
    } finally {
      await new Promise((resolve) => bare.server.close(resolve));
      rmSync(empty, { recursive: true, force: true });
    }
  });

  describe('mounted in the service', function () {
    this.timeout(120_000);
    let svc: TestService;

    before(async () => {
      await ensureConsoleBuilt();
      svc = await startTestService();
    });

    after(async () => {
      await svc.stop();
    });

    it('given the running service, when / is requested, then the console answers while the API, the login page and health keep theirs', async () => {
      const page = await recordedFetch(`${svc.service.url}/`);
      expect(page.status).to.equal(200);
      const html = await page.text();
      const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect(script, html).to.be.a('string');
      expect((await recordedFetch(`${svc.service.url}${script}`)).status).to.equal(200);
      const api = await recordedFetch(`${svc.service.url}/api/v1/no-such-route`);
      expect(api.status).to.equal(404);
      expect(await api.json()).to.deep.equal({ detail: 'Not Found' });
      expect((await recordedFetch(`${svc.service.url}/public/login`)).headers.get('content-type')).to.include('text/html');
      expect(await (await recordedFetch(`${svc.service.url}/healthz`)).json()).to.deep.equal({ status: 'ok', role: 'all' });
      expect((await recordedFetch(`${svc.service.url}/`, { method: 'POST' })).status).to.equal(405);
    });
  });
});
