import { expect } from 'chai';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { startTestService, type TestService } from '../../test/support/testService.ts';
import { frameGuard } from './frameGuard.ts';

const framingForbidden = (headers: Headers, what: string): void => {
  expect(headers.get('x-frame-options'), what).to.equal('DENY');
  expect(headers.get('content-security-policy') ?? '', what).to.match(/(^|;)\s*frame-ancestors 'none'(;|$)/);
};

describe('No HTML page of the service can be framed (clickjacking)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  it('given the public login page, when fetched, then frame-ancestors \'none\' and X-Frame-Options DENY, its own policy kept', async () => {
    const reply = await svc.client().get('/public/login');
    expect(reply.status).to.equal(200);
    framingForbidden(reply.headers, '/public/login');
    expect(reply.headers.get('content-security-policy')).to.include("default-src 'none'").and.include("form-action 'self'");
  });

  it('given every HTML page (console, a console route, the API reference), when fetched, then none may be framed', async () => {
    for (const path of ['/', '/console/tasks', '/api/v1/docs']) {
      const reply = await svc.client().get(path);
      expect(reply.status, path).to.equal(200);
      expect(reply.headers.get('content-type'), path).to.match(/^text\/html/);
      framingForbidden(reply.headers, path);
    }
  });

  it('given a redirect a browser asked for (Accept: text/html), when its HTML body is sent, then it may not be framed either', async () => {
    const reply = await svc.client().get('/api/v1/auth?client_id=web&redirect_uri=http://localhost:3000/cb&state=s', { headers: { accept: 'text/html' } });
    expect(reply.status).to.equal(303);
    expect(reply.headers.get('content-type')).to.match(/^text\/html/);
    framingForbidden(reply.headers, 'redirect');
  });
});

describe('frameGuard (the middleware)', () => {
  let server: Server;
  let url: string;
  before(async () => {
    const app = new Koa();
    app.use(frameGuard());
    app.use((ctx) => {
      if (ctx.path === '/own-policy') {
        ctx.type = 'text/html; charset=utf-8';
        ctx.set('Content-Security-Policy', "default-src 'self'");
        ctx.body = '<p>page</p>';
      } else if (ctx.path === '/no-policy') {
        ctx.type = 'html';
        ctx.body = '<p>page</p>';
      } else if (ctx.path === '/allows-self') {
        ctx.type = 'html';
        ctx.set('Content-Security-Policy', "frame-ancestors 'self'");
        ctx.body = '<p>page</p>';
      } else {
        ctx.body = { detail: 'json' };
      }
    });
    server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('given an HTML answer with a policy of its own, then frame-ancestors is added to it; with none, it is the policy', async () => {
    const own = await fetch(`${url}/own-policy`);
    expect(own.headers.get('content-security-policy')).to.equal("default-src 'self'; frame-ancestors 'none'");
    expect(own.headers.get('x-frame-options')).to.equal('DENY');
    const none = await fetch(`${url}/no-policy`);
    expect(none.headers.get('content-security-policy')).to.equal("frame-ancestors 'none'");
  });

  it('given a page that states its own frame-ancestors, then the directive is not doubled; JSON answers are left as they are', async () => {
    const self = await fetch(`${url}/allows-self`);
    expect(self.headers.get('content-security-policy')).to.equal("frame-ancestors 'self'");
    expect(self.headers.get('x-frame-options')).to.equal('DENY');
    const json = await fetch(`${url}/api`);
    expect(json.headers.get('content-security-policy')).to.equal(null);
    expect(json.headers.get('x-frame-options')).to.equal(null);
  });
});
