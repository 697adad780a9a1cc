import { expect } from 'chai';
import { ADMIN, startTestService, type TestService } from '../../test/support/testService.ts';
import type { Reply } from '../../test/support/HttpClient.ts';

const TOO_MANY_LOGINS = { detail: 'Too many failed login attempts, try again later' };

/** Runs `count` requests, `parallel` at a time (a busy attacker, without drowning a 2-core CI box). */
const hammer = async (count: number, parallel: number, request: () => Promise<Reply>): Promise<Reply[]> => {
  const replies: Reply[] = [];
  for (let start = 0; start < count; start += parallel) {
    replies.push(...(await Promise.all(Array.from({ length: Math.min(parallel, count - start) }, request))));
  }
  return replies;
};

const expect429 = (reply: Reply, detail: unknown) => {
  expect(reply.status).to.equal(429);
  expect(reply.json).to.deep.equal(detail);
  expect(Number(reply.headers.get('retry-after'))).to.be.a('number').and.be.greaterThan(0);
};

describe('brute-force throttling (HTTP, embedded service behind one trusted proxy)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ TRUST_PROXY_HOPS: '1', PASSWORD_CHANGE_MAX_FAILURES: '3', TOKEN_MAX_FAILURES_PER_ADDRESS: '4' });
  });
  after(async () => svc.stop());

  const loginFrom = (address: string, password: string) =>
    svc.client().post('/api/v1/login', { form: { username: ADMIN.username, password }, headers: { 'x-forwarded-for': address } });

  it('given 300 wrong passwords from one client, when they arrive, then at most 5 are checked and the rest get 429 with Retry-After', async () => {
    const replies = await hammer(300, 20, () => loginFrom('203.0.113.66', 'wrong-password'));
    expect(replies.filter((reply) => reply.status === 401)).to.have.length(5);
    const refused = replies.filter((reply) => reply.status === 429);
    expect(refused).to.have.length(295);
    for (const reply of refused) expect429(reply, TOO_MANY_LOGINS);
    expect(Number(refused[0]?.headers.get('retry-after'))).to.equal(60);
    // The right password from the attacker's address waits too: the pair is blocked, not the guess.
    expect((await loginFrom('203.0.113.66', ADMIN.password)).status).to.equal(429);
  });

  it('given an attacker blocked on the admin name, when the admin logs in from another address, then the login succeeds', async () => {
    await hammer(20, 10, () => loginFrom('203.0.113.77', 'wrong-password'));
    expect((await loginFrom('203.0.113.77', 'wrong-password')).status).to.equal(429);
    const login = await loginFrom('198.51.100.5', ADMIN.password);
    expect(login.status).to.equal(303);
  });

  it('given a spoofed X-Forwarded-For prefix, when the attacker rotates it, then the trusted hop decides the address and the block holds', async () => {
    await hammer(6, 6, () => loginFrom('203.0.113.88', 'wrong-password'));
    for (let index = 0; index < 5; index += 1) {
      expect((await loginFrom(`10.9.9.${index}, 203.0.113.88`, 'wrong-password')).status).to.equal(429);
    }
  });

  it('given wrong current passwords on change-password, when over the limit, then 429 and the right one waits too', async () => {
    const { token } = await svc.login();
    const change = (current: string) =>
      svc.client().post('/api/v1/user/change-password', { token, json: { current_password: current, new_password: 'another-password-1' } });
    for (let index = 0; index < 3; index += 1) expect((await change('wrong-password')).status).to.equal(401);
    expect429(await change('wrong-password'), { detail: 'Too many failed password changes, try again later' });
    expect((await change(ADMIN.password)).status).to.equal(429);
  });

  it('given failed code and refresh grants from one address, when over the limit, then 429; another address is unaffected', async () => {
    const grant = (address: string, credentials: Record<string, unknown>, type = 'authorization_code') =>
      svc.client().post('/api/v1/token', { json: { grant_type: type, credentials }, headers: { 'x-forwarded-for': address } });
    for (let index = 0; index < 2; index += 1) expect((await grant('203.0.113.99', { code: 'ab'.repeat(16) })).status).to.equal(401);
    for (let index = 0; index < 2; index += 1) expect((await grant('203.0.113.99', { token_string: 'cd'.repeat(32) }, 'refresh_token')).status).to.equal(401);
    expect429(await grant('203.0.113.99', { code: 'ab'.repeat(16) }), { detail: 'Too many failed token requests, try again later' });
    expect((await grant('198.51.100.9', { code: 'ab'.repeat(16) })).status).to.equal(401);
  });
});

describe('brute-force throttling without a trusted proxy (HTTP, embedded service)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ LOGIN_MAX_FAILURES: '3' });
  });
  after(async () => svc.stop());

  it('given X-Forwarded-For from the client itself, when the attacker rotates it, then it is ignored and the block holds', async () => {
    const guess = (index: number) =>
      svc.client().post('/api/v1/login', { form: { username: ADMIN.username, password: 'wrong-password' }, headers: { 'x-forwarded-for': `10.0.0.${index}` } });
    const statuses: number[] = [];
    for (let index = 0; index < 10; index += 1) statuses.push((await guess(index)).status);
    expect(statuses).to.deep.equal([401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
  });
});
