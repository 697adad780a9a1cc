import { expect } from 'chai';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startTestService, type TestService } from '../../test/support/testService.ts';

describe('HTTP facade (embedded service)', () => {
  let svc: TestService;
  let token: string;
  before(async () => {
    svc = await startTestService({ BODY_LIMIT: '64kb' });
    token = (await svc.login()).token;
  });
  after(async () => svc.stop());

  it('given a started service, when /healthz is called, then 200 ok', async () => {
    const reply = await svc.client().get('/healthz');
    expect(reply.status).to.equal(200);
    expect(reply.json).to.deep.equal({ status: 'ok', role: 'all' });
  });

  it('given an unknown route, when called with or without a token, then 404 Not Found', async () => {
    for (const options of [{}, { token }]) {
      const reply = await svc.client().get('/api/v1/nowhere', options);
      expect(reply.status).to.equal(404);
      expect(reply.json).to.deep.equal({ detail: 'Not Found' });
    }
  });

  it('given a private route, when called with a method it does not serve, then 405 Method Not Allowed', async () => {
    for (const path of ['/api/v1/catalog/create', '/api/v1/task/run', '/api/v1/catalog/search']) {
      const reply = await svc.client().get(path, { token });
      expect(reply.status, path).to.equal(405);
      expect(reply.json).to.deep.equal({ detail: 'Method Not Allowed' });
    }
    const ok = await svc.client().get('/api/v1/catalog/item-types/supported-types', { token });
    expect(ok.status).to.equal(200);
  });

  it('given a private route, when called without a token, then 401 before anything else', async () => {
    const reply = await svc.client().post('/api/v1/user/change-password', { json: {} });
    expect(reply.status).to.equal(401);
    expect(reply.json).to.deep.equal({ detail: 'User not authenticated' });
  });

  it('given malformed JSON, when posted to a JSON route, then 422 json_invalid and never 500', async () => {
    const reply = await svc.client().post('/api/v1/token', { body: '{"grant_type": ', headers: { 'content-type': 'application/json' } });
    expect(reply.status).to.equal(422);
    expect((reply.json as { detail: Array<{ type: string }> }).detail[0]?.type).to.equal('json_invalid');
  });

  it('given a non-JSON body, when posted to a JSON route, then 422 and never 500', async () => {
    for (const [body, type] of [
      ['grant_type=authorization_code', 'text/plain'],
      ['[1,2,3]', 'application/json'],
      ['"just a string"', 'application/json'],
    ] as const) {
      const reply = await svc.client().post('/api/v1/token', { body, headers: { 'content-type': type } });
      expect(reply.status, `${type} ${body}`).to.equal(422);
    }
  });

  it('given a body over the limit, when posted, then 413 with a detail', async () => {
    const reply = await svc.client().post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: { pad: 'x'.repeat(100_000) } } });
    expect(reply.status).to.equal(413);
    expect(reply.json).to.deep.equal({ detail: 'Request body too large' });
    const form = await svc.client().post('/api/v1/login', { form: { username: 'x'.repeat(100_000), password: 'y' } });
    expect(form.status).to.equal(413);
  });

  it('given requests, when served, then API and PERFORMANCE lines are written as JSON lines for the day', async () => {
    await svc.client().get('/api/v1/user/me', { token });
    await svc.service.logger.flush();
    const day = new Date().toISOString().slice(0, 10);
    const read = (category: string) =>
      readFileSync(join(svc.dataDir, 'logs', category, `${day}.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const api = read('API').filter((line) => line.path === '/api/v1/user/me');
    expect(api.at(-1)).to.include({ level: 'info', category: 'API', status: 200, method: 'GET' });
    const performance = read('PERFORMANCE').filter((line) => line.operation === 'GET /api/v1/user/me');
    const message = JSON.parse(String(performance.at(-1)?.message)) as { execution_time: number; error: null };
    expect(message.error).to.equal(null);
    expect(message.execution_time).to.be.a('number').and.greaterThan(0);
    expect(readdirSync(join(svc.dataDir, 'logs'))).to.include.members(['API', 'PERFORMANCE', 'sessions']);
  });
});
