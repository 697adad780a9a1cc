import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestService, type TestService } from '../../test/support/testService.ts';

describe('user endpoints (HTTP, embedded service)', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startTestService();
    admin = (await svc.login()).token;
  });
  after(async () => svc.stop());

  const createUser = (body: Record<string, unknown>, token = admin) => svc.client().post('/api/v1/user/create', { json: body, token });

  it('given an admin, when creating a user that must change password, then the user is limited to me and change-password until it does', async () => {
    const created = await createUser({ username: 'grace', email: 'grace@example.com', password: 'initial-pass', must_change_password: true });
    expect(created.status).to.equal(200);
    expect((created.json as { user_laui: string }).user_laui).to.match(/^[0-9a-f]{24}$/);

    const { token, client } = await svc.login('grace', 'initial-pass');
    const tokenReply = await client.post('/api/v1/token', {
      json: { grant_type: 'refresh_token', credentials: { token_string: client.jar.get('refresh_token') } },
    });
    expect(tokenReply.json).to.deep.equal({ must_change_password: true });

    const blocked = await svc.client().get('/api/v1/user/marketplace_access_token/get', { token });
    expect(blocked.status).to.equal(403);
    expect(blocked.json).to.deep.equal({ detail: 'Password change required' });
    expect((await svc.client().get('/api/v1/user/me', { token })).status).to.equal(200);

    const wrong = await svc.client().post('/api/v1/user/change-password', { json: { current_password: 'nope-nope', new_password: 'brand-new-pass' }, token });
    expect(wrong.status).to.equal(401);
    expect(wrong.json).to.deep.equal({ detail: 'User not authenticated' });

    const changed = await svc.client().post('/api/v1/user/change-password', {
      json: { current_password: 'initial-pass', new_password: 'brand-new-pass' },
      token,
    });
    expect(changed.status).to.equal(200);
    expect(changed.json).to.deep.equal({ message: 'Password changed successfully' });
    expect((await svc.client().get('/api/v1/user/marketplace_access_token/get', { token })).status).to.equal(200);
    expect((await svc.client().post('/api/v1/login', { form: { username: 'grace', password: 'initial-pass' } })).status).to.equal(401);
    expect((await svc.client().post('/api/v1/login', { form: { username: 'grace', password: 'brand-new-pass' } })).status).to.equal(303);
  });

  it('given a non-admin, when creating a user, then 403 Access denied', async () => {
    await createUser({ username: 'linus', email: 'l@example.com', password: 'password-123', must_change_password: false });
    const { token } = await svc.login('linus', 'password-123');
    const reply = await createUser({ username: 'other', email: 'o@example.com', password: 'password-123' }, token);
    expect(reply.status).to.equal(403);
    expect(reply.json).to.deep.equal({ detail: 'Access denied' });
  });

  it('given 20 concurrent creations of one username, when they race, then exactly one succeeds and the rest get 409', async () => {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, index) => createUser({ username: 'Racer', email: `r${index}@example.com`, password: 'password-123' })),
    );
    expect(replies.filter((reply) => reply.status === 200)).to.have.length(1);
    const conflicts = replies.filter((reply) => reply.status === 409);
    expect(conflicts).to.have.length(19);
    expect(conflicts[0]?.json).to.deep.equal({ detail: 'User already exists' });
    // Names are unique regardless of case.
    expect((await createUser({ username: 'racer', email: 'x@example.com', password: 'password-123' })).status).to.equal(409);
  });

  it('given missing fields, when changing password or storing a token, then 422 lists them in the body', async () => {
    const reply = await svc.client().post('/api/v1/user/change-password', { json: { new_password: 'x' }, token: admin });
    expect(reply.status).to.equal(422);
    expect(reply.json).to.deep.equal({ detail: [{ type: 'missing', loc: ['body', 'current_password'], msg: 'Field required', input: { new_password: 'x' } }] });
    const token = await svc.client().post('/api/v1/user/marketplace_access_token/update', { json: {}, token: admin });
    expect(token.status).to.equal(422);
  });

  it('given a stored marketplace token, when read back, then it round-trips and the event log holds only ciphertext', async () => {
    const secret = 'mkt-secret-token-0123456789';
    const stored = await svc.client().post('/api/v1/user/marketplace_access_token/update', { json: { marketplace_access_token: secret }, token: admin });
    expect(stored.status).to.equal(200);
    expect((stored.json as { message: string; user_id: string }).user_id).to.match(/^[0-9a-f]{24}$/);
    const read = await svc.client().get('/api/v1/user/marketplace_access_token/get', { token: admin });
    expect(read.json).to.deep.equal({ marketplace_access_token: secret });
    const raw = ['events.sqlite', 'events.sqlite-wal']
      .map((file) => join(svc.dataDir, file))
      .filter((path) => existsSync(path))
      .map((path) => readFileSync(path).toString('latin1'))
      .join('');
    expect(raw).to.include('MarketplaceTokenUpdated');
    expect(raw).to.not.include(secret);
  });
});
