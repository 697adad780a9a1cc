import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newLaui } from '../../shared/ids.ts';
import { sseEvents } from '../../test/support/sseEvents.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

describe('PUBLIC_ROUTES_REQUIRE_AUTH: the logs routes behind a token (HTTP, embedded service)', () => {
  let svc: TestService;
  let token: string;
  const session = newLaui(new Date());
  const paths = [
    '/api/v1/logs/listItems',
    '/api/v1/logs/listItems/TASK',
    '/api/v1/logs/file/TASK/2026-01-01.jsonl',
    '/api/v1/logs/file/TASK/2026-01-01.jsonl?reverse=true',
    `/api/v1/logs/session/${session}`,
    `/api/v1/logs/session/${session}/content`,
  ];

  before(async () => {
    svc = await startTestService({ PUBLIC_ROUTES_REQUIRE_AUTH: 'true' });
    mkdirSync(join(svc.dataDir, 'logs', 'TASK'), { recursive: true });
    writeFileSync(join(svc.dataDir, 'logs', 'TASK', '2026-01-01.jsonl'), '{"level":"info","message":"hello"}\n');
    token = (await svc.login()).token;
  });
  after(async () => svc.stop());

  it('given no token, a malformed one or a bad signature, when a logs route is called, then 401 before any stream starts', async () => {
    for (const path of paths) {
      const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer x.y.z' }, { cookie: 'frontend_token=abc.def.ghi' }, { authorization: `Bearer ${token}x` }];
      for (const headers of attempts) {
        const reply = await svc.client().get(path, { headers });
        expect(reply.status, `${path} ${JSON.stringify(headers)}`).to.equal(401);
        expect(reply.json).to.deep.equal({ detail: 'User not authenticated' });
        expect(reply.headers.get('content-type')).to.match(/application\/json/);
      }
    }
  });

  it('given no token, when POST /logs/query is called, then 401 (not the route\'s own 200 {error}); with a token it answers', async () => {
    const body = { sql: 'SELECT count(*) AS n FROM logs', category: 'TASK', date: '2026-01-01' };
    const refused = await svc.client().post('/api/v1/logs/query', { json: body });
    expect(refused.status).to.equal(401);
    expect(refused.json).to.deep.equal({ detail: 'User not authenticated' });
    const answered = await svc.client().post('/api/v1/logs/query', { json: body, token });
    expect(answered.status).to.equal(200);
    expect(answered.json).to.deep.include({ columns: ['n'], rows: [[1]], row_count: 1 });
  });

  it('given a Bearer token, when a logs route is called, then it answers as without the setting', async () => {
    const listed = await svc.client().get('/api/v1/logs/listItems/TASK', { token });
    expect(listed.status).to.equal(200);
    expect(sseEvents(listed.text).map((event) => event.event)).to.deep.equal(['status', 'data', 'done']);
    const file = await svc.client().get('/api/v1/logs/file/TASK/2026-01-01.jsonl', { token });
    expect(sseEvents(file.text).map((event) => event.event)).to.deep.equal(['status', 'metadata', 'chunk', 'done']);
    const content = await svc.client().get(`/api/v1/logs/session/${session}/content`, { token });
    expect(content.status).to.equal(200);
  });

  it('given the frontend_token cookie (a browser after login), when a logs route is called, then it answers', async () => {
    const reply = await svc.client().get('/api/v1/logs/listItems', { headers: { cookie: `frontend_token=${token}` } });
    expect(reply.status).to.equal(200);
    expect(sseEvents(reply.text).map((event) => event.event)).to.deep.equal(['status', 'data', 'done']);
  });

  it('given a token of a session that was logged out, when a logs route is called, then 401', async () => {
    const { token: other, client } = await svc.login();
    expect((await svc.client().get('/api/v1/logs/listItems', { token: other })).status).to.equal(200);
    const out = await client.post('/api/v1/logout', { token: other });
    expect(out.status).to.equal(200);
    expect((await svc.client().get('/api/v1/logs/listItems', { token: other })).status).to.equal(401);
  });

  it('given the setting, when a route outside the logs is called, then nothing changed there (private routes still want a Bearer token)', async () => {
    expect((await svc.client().get('/api/v1/user/me', { headers: { cookie: `frontend_token=${token}` } })).status).to.equal(401);
    expect((await svc.client().get('/api/v1/user/me', { token })).status).to.equal(200);
  });
});
