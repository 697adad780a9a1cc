import { expect } from 'chai';
import { SignJWT, generateKeyPair } from 'jose';
import { fixedClock } from '../../shared/clock.ts';
import { JoseTokenSigner } from '../../ops/auth/JoseTokenSigner.ts';
import { loadKeys } from '../../ops/keys/loadKeys.ts';
import { ADMIN, startTestService, type TestService } from '../../test/support/testService.ts';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('authentication flow (HTTP, embedded service)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc.stop());

  describe('POST /login, GET /auth, GET /redirect-with-code', () => {
    it('given no session, when /auth is called, then 303 to the login page with an oauth_flow cookie', async () => {
      const client = svc.client();
      const reply = await client.get('/api/v1/auth?client_id=web&redirect_uri=http://localhost:3000/cb&state=xyz');
      expect(reply.status).to.equal(303);
      expect(reply.headers.get('location')).to.equal('/public/login');
      expect(reply.cookies.oauth_flow).to.be.a('string').and.not.equal('');
    });

    it('given valid credentials, when the whole flow runs, then the client gets state and a single-use hex code', async () => {
      const client = svc.client();
      await client.get('/api/v1/auth?client_id=web&redirect_uri=http://localhost:3000/cb?x=1&state=xyz');
      const login = await client.post('/api/v1/login', { form: { username: ADMIN.username, password: ADMIN.password } });
      expect(login.status).to.equal(303);
      const admin = (await svc.service.readStore.collection('users').find({ where: { username_key: 'admin' } }))[0];
      expect(login.headers.get('location')).to.equal(`/api/v1/redirect-with-code?user_laui=${String(admin?.id)}`);
      expect(login.cookies.session).to.be.a('string');

      const redirect = await client.get(login.headers.get('location') ?? '');
      expect(redirect.status).to.equal(303);
      const target = new URL(redirect.headers.get('location') ?? '');
      expect(target.origin + target.pathname).to.equal('http://localhost:3000/cb');
      expect(target.searchParams.get('state')).to.equal('xyz');
      expect(target.searchParams.get('x')).to.equal('1');
      const code = target.searchParams.get('code') ?? '';
      expect(code).to.match(/^[0-9a-f]{32}$/);

      const token = await client.post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } } });
      expect(token.status).to.equal(200);
      expect(token.json).to.deep.equal({ must_change_password: false });
      expect(token.cookies.frontend_token?.split('.')).to.have.length(3);
      expect(token.cookies.refresh_token).to.match(/^[0-9a-f]{64}$/);

      const again = await client.post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } } });
      expect(again.status).to.equal(401);
      expect(again.json).to.deep.equal({ detail: 'Invalid authorization code' });
    });

    it('given a session, when /auth is called, then 303 straight to redirect-with-code', async () => {
      const { client } = await svc.login();
      const reply = await client.get('/api/v1/auth?client_id=web&redirect_uri=http://localhost/cb&state=s');
      expect(reply.status).to.equal(303);
      expect(reply.headers.get('location')).to.match(/^\/api\/v1\/redirect-with-code\?user_laui=[0-9a-f]{24}$/);
    });

    it('given missing form fields, when logging in, then 422 lists each missing field', async () => {
      const reply = await svc.client().post('/api/v1/login', { form: {} });
      expect(reply.status).to.equal(422);
      const detail = (reply.json as { detail: Array<{ type: string; loc: unknown[] }> }).detail;
      expect(detail.map((entry) => [entry.type, entry.loc])).to.deep.equal([
        ['missing', ['body', 'username']],
        ['missing', ['body', 'password']],
      ]);
    });

    it('given a wrong password or an unknown user, when logging in, then 401 Invalid username or password', async () => {
      for (const form of [{ username: ADMIN.username, password: 'wrong-password' }, { username: 'nobody', password: 'x' }]) {
        const reply = await svc.client().post('/api/v1/login', { form });
        expect(reply.status).to.equal(401);
        expect(reply.json).to.deep.equal({ detail: 'Invalid username or password' });
      }
    });

    it('given no oauth_flow cookie, when redirect-with-code is called, then 403 with an empty body', async () => {
      const reply = await svc.client().get('/api/v1/redirect-with-code?user_laui=65a000000000000000000001');
      expect(reply.status).to.equal(403);
      expect(reply.text).to.equal('');
    });

    it('given an oauth_flow but a user_laui other than the session user, when redirect-with-code is called, then 401', async () => {
      const { client } = await svc.login();
      await client.get('/api/v1/auth?client_id=web&redirect_uri=http://localhost/cb&state=s');
      const reply = await client.get('/api/v1/redirect-with-code?user_laui=65a000000000000000000001');
      expect(reply.status).to.equal(401);
    });

    it('given a foreign redirect_uri, when /auth is called, then 400 and no cookie', async () => {
      const reply = await svc.client().get('/api/v1/auth?client_id=web&redirect_uri=https://evil.example/cb&state=s');
      expect(reply.status).to.equal(400);
      expect(reply.json).to.deep.equal({ detail: 'Invalid argument: redirect_uri is not allowed' });
      expect(reply.cookies.oauth_flow).to.equal(undefined);
    });

    it('given redirect_uri values a browser resolves to another host or scheme, when /auth is called, then 400 and no cookie', async () => {
      for (const encoded of [
        '/%09/evil.example/cb',
        '/%0A/evil.example/cb',
        '/%0D/evil.example/cb',
        '%09//evil.example/cb',
        '//evil.example/cb',
        '/%5Cevil.example/cb',
        '/%5C/evil.example/cb',
        '%5C%5Cevil.example/cb',
        'javascript:alert(1)',
        'data:text/html,x',
        'http://127.0.0.1.evil.example/cb',
        'http://localhost@evil.example/cb',
        'http://evil.example@localhost/cb',
      ]) {
        const reply = await svc.client().get(`/api/v1/auth?client_id=web&redirect_uri=${encoded}&state=s`);
        expect(reply.status, encoded).to.equal(400);
        expect(reply.json).to.deep.equal({ detail: 'Invalid argument: redirect_uri is not allowed' });
        expect(reply.cookies.oauth_flow, encoded).to.equal(undefined);
      }
    });

    it('given a same-origin path with a tab in it, when the flow runs, then the code goes to the service itself', async () => {
      const client = svc.client();
      const auth = await client.get('/api/v1/auth?client_id=web&redirect_uri=/c%09b?x=1&state=s');
      expect(auth.status).to.equal(303);
      const login = await client.post('/api/v1/login', { form: { username: ADMIN.username, password: ADMIN.password } });
      const redirect = await client.get(login.headers.get('location') ?? '');
      const target = new URL(redirect.headers.get('location') ?? '');
      expect(target.origin + target.pathname).to.equal(`${svc.service.url}/cb`);
      expect(target.searchParams.get('x')).to.equal('1');
    });

    it('given the login page path, when fetched, then an HTML form posts to /api/v1/login', async () => {
      const reply = await svc.client().get('/public/login');
      expect(reply.status).to.equal(200);
      expect(reply.headers.get('content-type')).to.match(/text\/html/);
      expect(reply.text).to.include('action="/api/v1/login"').and.include('name="password"');
    });
  });

  describe('POST /token', () => {
    it('given a refresh grant without token_string, when posted, then 400 naming token_string', async () => {
      const reply = await svc.client().post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: {} } });
      expect(reply.status).to.equal(400);
      expect(reply.json).to.deep.equal({ detail: 'For grant type refresh_token, token_string must be passed in credentials' });
    });

    it('given an unknown code, when posted, then 401 Invalid authorization code', async () => {
      const reply = await svc.client().post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code: 'ab'.repeat(16) } } });
      expect(reply.status).to.equal(401);
      expect(reply.json).to.deep.equal({ detail: 'Invalid authorization code' });
    });

    it('given a bad grant_type, when posted, then 422 enum entry', async () => {
      const reply = await svc.client().post('/api/v1/token', { json: { grant_type: 'password', credentials: {} } });
      expect(reply.status).to.equal(422);
      expect((reply.json as { detail: Array<{ type: string }> }).detail[0]?.type).to.equal('enum');
    });

    it('given a refresh token, when rotated, then a new one works once and reusing the old revokes the family', async () => {
      const { client } = await svc.login();
      const first = client.jar.get('refresh_token') ?? '';
      const rotated = await client.post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: { token_string: first } } });
      expect(rotated.status).to.equal(200);
      const second = rotated.cookies.refresh_token ?? '';
      expect(second).to.match(/^[0-9a-f]{64}$/).and.not.equal(first);

      const reuse = await client.post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: { token_string: first } } });
      expect(reuse.status).to.equal(401);
      const afterRevocation = await client.post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: { token_string: second } } });
      expect(afterRevocation.status).to.equal(401);
    });

    it('given one code redeemed by 10 concurrent requests, when they race, then exactly one gets a token', async () => {
      const client = svc.client();
      await client.get('/api/v1/auth?client_id=web&redirect_uri=http://localhost/cb&state=s');
      const login = await client.post('/api/v1/login', { form: { username: ADMIN.username, password: ADMIN.password } });
      const redirect = await client.get(login.headers.get('location') ?? '');
      const code = new URL(redirect.headers.get('location') ?? '').searchParams.get('code');
      const replies = await Promise.all(
        Array.from({ length: 10 }, () => svc.client().post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code } } })),
      );
      expect(replies.filter((reply) => reply.status === 200)).to.have.length(1);
      expect(replies.filter((reply) => reply.status === 401)).to.have.length(9);
    });
  });

  describe('access tokens on private routes', () => {
    const me = (headers: Record<string, string>) => svc.client().get('/api/v1/user/me', { headers });

    it('given a valid token, when /user/me is called, then the profile comes back', async () => {
      const { token } = await svc.login();
      const reply = await me({ authorization: `Bearer ${token}` });
      expect(reply.status).to.equal(200);
      expect(reply.json).to.include({ username: 'admin', email: 'admin@localhost', chat_agent_laui: null, chat_agent_name: null });
    });

    it('given no token, a tampered token, another key, alg none or an expired token, when calling, then 401', async () => {
      const { token } = await svc.login();
      const [header, payload, signature] = token.split('.');
      const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as Record<string, unknown>;
      const tampered = `${header}.${b64({ ...claims, sub: '65a000000000000000000001' })}.${signature}`;
      const other = await generateKeyPair('RS256');
      const foreign = await new JoseTokenSigner(other.privateKey, other.publicKey, fixedClock(new Date())).sign('access', String(claims.sub), {}, 3600);
      const none = `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`;
      const keys = await loadKeys({ dataDir: svc.dataDir, jwtPrivateKeyPem: null, jwtPublicKeyPem: null, encryptionKey: null });
      const expired = await new JoseTokenSigner(keys.jwtPrivateKey, keys.jwtPublicKey, fixedClock(new Date(Date.now() - 25 * 3600 * 1000))).sign(
        'access',
        String(claims.sub),
        {},
        24 * 3600,
      );
      const sessionAudience = await new JoseTokenSigner(keys.jwtPrivateKey, keys.jwtPublicKey, fixedClock(new Date())).sign('session', String(claims.sub), {}, 3600);
      expect((await me({})).status).to.equal(401);
      for (const bad of [tampered, foreign, none, expired, sessionAudience, 'garbage']) {
        const reply = await me({ authorization: `Bearer ${bad}` });
        expect(reply.status, bad).to.equal(401);
        expect(reply.json).to.deep.equal({ detail: 'User not authenticated' });
      }
      // The same key, audience and clock do work: the failures above are the token's, not the setup's.
      const good = await new JoseTokenSigner(keys.jwtPrivateKey, keys.jwtPublicKey, fixedClock(new Date())).sign('access', String(claims.sub), {}, 3600);
      expect((await me({ authorization: `Bearer ${good}` })).status).to.equal(200);
    });
  });

  describe('token lifetime', () => {
    it('given an access token signed with the service key but living a century, when used as Bearer, then 401', async () => {
      const { token } = await svc.login();
      const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
      const keys = await loadKeys({ dataDir: svc.dataDir, jwtPrivateKeyPem: null, jwtPublicKeyPem: null, encryptionKey: null });
      const now = Math.floor(Date.now() / 1000);
      const century = await new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
        .setIssuer('pipeline-orchestrator')
        .setAudience('access')
        .setSubject(String(claims.sub))
        .setIssuedAt(now)
        .setExpirationTime(now + 100 * 365 * 24 * 3600)
        .sign(keys.jwtPrivateKey);
      const reply = await svc.client().get('/api/v1/user/me', { token: century });
      expect(reply.status).to.equal(401);
      expect(reply.json).to.deep.equal({ detail: 'User not authenticated' });
      expect((await svc.client().get('/api/v1/user/me', { token })).status).to.equal(200);
    });
  });

  describe('cookie helpers and logout', () => {
    it('given no frontend_token cookie, when checked, then 422 with the cookie location', async () => {
      const reply = await svc.client().get('/api/v1/check_frontend_token_present');
      expect(reply.status).to.equal(422);
      expect(reply.json).to.deep.equal({ detail: [{ type: 'missing', loc: ['cookie', 'frontend_token'], msg: 'Field required', input: null }] });
    });

    it('given a logged-in browser, when checking, fetching the MCP token and logging out, then each answers as the spec says', async () => {
      const { client, token } = await svc.login();
      const present = await client.get('/api/v1/check_frontend_token_present');
      expect(present.status).to.equal(200);
      expect(present.text).to.equal('');
      const mcp = await client.get('/api/v1/get-mcp-token');
      expect(mcp.json).to.deep.equal({ access_token: token });
      const refresh = client.jar.get('refresh_token') ?? '';
      const logout = await client.post('/api/v1/logout');
      expect(logout.status).to.equal(200);
      expect(logout.json).to.equal('logged out');
      expect(client.jar.has('frontend_token')).to.equal(false);
      expect(client.jar.has('session')).to.equal(false);
      const refreshAfterLogout = await svc.client().post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: { token_string: refresh } } });
      expect(refreshAfterLogout.status).to.equal(401);
    });

    it('given a logged-out browser, when its old access token, session cookie and refresh token are replayed, then none works', async () => {
      const { client, token } = await svc.login();
      const session = client.jar.get('session') ?? '';
      const refresh = client.jar.get('refresh_token') ?? '';
      expect((await svc.client().get('/api/v1/user/me', { token })).status).to.equal(200);
      expect((await client.post('/api/v1/logout')).status).to.equal(200);

      const me = await svc.client().get('/api/v1/user/me', { token });
      expect(me.status).to.equal(401);
      expect(me.json).to.deep.equal({ detail: 'User not authenticated' });
      const mcp = await svc.client().get('/api/v1/get-mcp-token', { headers: { cookie: `frontend_token=${token}` } });
      expect(mcp.status).to.equal(401);
      expect(mcp.json).to.deep.equal({ detail: 'Invalid token' });
      const replayed = svc.client();
      replayed.jar.set('session', session);
      const auth = await replayed.get('/api/v1/auth?client_id=web&redirect_uri=http://localhost/cb&state=s');
      expect(auth.headers.get('location')).to.equal('/public/login');
      const userLaui = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()).sub as string;
      expect((await replayed.get(`/api/v1/redirect-with-code?user_laui=${userLaui}`)).status).to.equal(401);
      const rotate = await svc.client().post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: { token_string: refresh } } });
      expect(rotate.status).to.equal(401);
    });

    it('given a CLI that redeemed a code of a browser session, when the browser logs out, then the CLI tokens stop working too', async () => {
      const browser = svc.client();
      await browser.get('/api/v1/auth?client_id=cli&redirect_uri=http://localhost/cb&state=s');
      const login = await browser.post('/api/v1/login', { form: { username: ADMIN.username, password: ADMIN.password } });
      const code = () => browser.get(login.headers.get('location') ?? '').then((reply) => new URL(reply.headers.get('location') ?? '').searchParams.get('code'));
      const cli = svc.client();
      expect((await cli.post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code: await code() } } })).status).to.equal(200);
      const cliToken = cli.jar.get('frontend_token') ?? '';
      const cliRefresh = cli.jar.get('refresh_token') ?? '';
      const unredeemed = await code();
      expect((await svc.client().get('/api/v1/user/me', { token: cliToken })).status).to.equal(200);

      expect((await browser.post('/api/v1/logout')).status).to.equal(200);

      expect((await svc.client().get('/api/v1/user/me', { token: cliToken })).status).to.equal(401);
      const rotate = await svc.client().post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: { token_string: cliRefresh } } });
      expect(rotate.status).to.equal(401);
      const redeem = await svc.client().post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code: unredeemed } } });
      expect(redeem.status).to.equal(401);
      expect(redeem.json).to.deep.equal({ detail: 'Invalid authorization code' });
    });

    it('given a client that logs out with only its Bearer token, when the token is used again, then 401; other sessions still work', async () => {
      const mine = await svc.login();
      const other = await svc.login();
      const logout = await svc.client().post('/api/v1/logout', { token: mine.token });
      expect(logout.status).to.equal(200);
      expect((await svc.client().get('/api/v1/user/me', { token: mine.token })).status).to.equal(401);
      expect((await svc.client().get('/api/v1/user/me', { token: other.token })).status).to.equal(200);
      // A second logout of the same session changes nothing.
      expect((await svc.client().post('/api/v1/logout', { token: mine.token })).status).to.equal(200);
    });

    it('given a session cookie without a session id, when /auth is called, then it counts as no session', async () => {
      const { token } = await svc.login();
      const sub = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()).sub as string;
      const keys = await loadKeys({ dataDir: svc.dataDir, jwtPrivateKeyPem: null, jwtPublicKeyPem: null, encryptionKey: null });
      const legacy = await new JoseTokenSigner(keys.jwtPrivateKey, keys.jwtPublicKey, fixedClock(new Date())).sign('session', sub, { username: 'admin' }, 3600);
      const client = svc.client();
      client.jar.set('session', legacy);
      const auth = await client.get('/api/v1/auth?client_id=web&redirect_uri=http://localhost/cb&state=s');
      expect(auth.headers.get('location')).to.equal('/public/login');
    });

    it('given no cookie or a bad cookie, when asking for the MCP token, then 401 Unauthorized or Invalid token', async () => {
      const missing = await svc.client().get('/api/v1/get-mcp-token');
      expect(missing.status).to.equal(401);
      expect(missing.json).to.deep.equal({ detail: 'Unauthorized' });
      const bad = await svc.client().get('/api/v1/get-mcp-token', { headers: { cookie: 'frontend_token=abc.def.ghi' } });
      expect(bad.status).to.equal(401);
      expect(bad.json).to.deep.equal({ detail: 'Invalid token' });
    });
  });
});

describe('logout across a restart (HTTP, embedded service)', () => {
  it('given a logged-out session, when the service restarts on the same data, then its token is still refused', async () => {
    const first = await startTestService();
    let second: TestService | null = null;
    try {
      const { client, token } = await first.login();
      const kept = await first.login();
      expect((await client.post('/api/v1/logout')).status).to.equal(200);
      await first.stop({ keepData: true });
      second = await startTestService({}, {}, first.dataDir);
      expect((await second.client().get('/api/v1/user/me', { token })).status).to.equal(401);
      expect((await second.client().get('/api/v1/user/me', { token: kept.token })).status).to.equal(200);
    } finally {
      // The second service owns the data directory once it runs; before that the first one does.
      await (second ?? first).stop().catch(() => undefined);
    }
  });
});
