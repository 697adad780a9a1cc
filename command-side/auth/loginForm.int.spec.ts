import { expect } from 'chai';
import { ADMIN, startTestService, type TestService } from '../../test/support/testService.ts';

/** What Chromium sends with a form post: HTML first, anything else at a lower weight. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe('login form after a refused sign-in (POST /api/v1/login from a browser and from API clients)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc.stop());

  const browserLogin = (form: Record<string, string>) => svc.client().post('/api/v1/login', { form, headers: { accept: BROWSER_ACCEPT } });

  it('given a browser posting a wrong password, when the form is submitted, then the same 401 answers with the form again, the reason above it and the username kept', async () => {
    const reply = await browserLogin({ username: ADMIN.username, password: 'wrong-password' });
    expect(reply.status).to.equal(401);
    expect(reply.headers.get('content-type')).to.match(/^text\/html/);
    expect(reply.text).to.include('role="alert"').and.include('Invalid username or password');
    expect(reply.text).to.include('action="/api/v1/login"').and.include(`value="${ADMIN.username}"`);
    // The same locked-down page as GET /public/login: no script, never framed, never cached.
    expect(reply.headers.get('content-security-policy')).to.include("default-src 'none'").and.include("frame-ancestors 'none'");
    expect(reply.headers.get('cache-control')).to.equal('no-store');
    expect(reply.cookies).not.to.have.property('session');
  });

  it('given a username with markup, when it is refused, then it comes back escaped, never as markup', async () => {
    const reply = await browserLogin({ username: '"><script>x</script>', password: 'wrong-password' });
    expect(reply.status).to.equal(401);
    expect(reply.text).not.to.include('<script>');
    expect(reply.text).to.include('value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"');
  });

  it('given an API client (JSON or no Accept), when the password is wrong, then the answer stays the JSON 401 of the spec', async () => {
    const variants: Array<Record<string, string>> = [{}, { accept: 'application/json' }, { accept: '*/*' }];
    for (const headers of variants) {
      const reply = await svc.client().post('/api/v1/login', { form: { username: ADMIN.username, password: 'wrong-password' }, headers });
      expect(reply.status).to.equal(401);
      expect(reply.json).to.deep.equal({ detail: 'Invalid username or password' });
    }
  });

  it('given a browser posting the form without a password, when submitted, then the form asks for both fields under the 422', async () => {
    const reply = await browserLogin({ username: 'someone' });
    expect(reply.status).to.equal(422);
    expect(reply.text).to.include('Enter a username and a password.').and.include('value="someone"');
  });

  it('given a browser past the failed-login limit, when it tries again, then the form says to wait, under 429 with Retry-After', async () => {
    let reply = await browserLogin({ username: 'ghost', password: 'wrong-password' });
    for (let attempt = 0; attempt < 10 && reply.status !== 429; attempt += 1) reply = await browserLogin({ username: 'ghost', password: 'wrong-password' });
    expect(reply.status).to.equal(429);
    expect(Number(reply.headers.get('retry-after'))).to.be.greaterThan(0);
    expect(reply.headers.get('content-type')).to.match(/^text\/html/);
    expect(reply.text).to.include('role="alert"').and.include('Too many failed login attempts, try again later');
  });

  it('given a browser with the right password, when submitted, then it is signed in as before (303 on to redirect-with-code)', async () => {
    const reply = await browserLogin({ username: ADMIN.username, password: ADMIN.password });
    expect(reply.status).to.equal(303);
    expect(reply.headers.get('location')).to.match(/^\/api\/v1\/redirect-with-code\?user_laui=/);
  });
});
