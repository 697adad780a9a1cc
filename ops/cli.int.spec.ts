import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestService, type TestService } from '../test/support/testService.ts';

const run = promisify(execFile);

const cli = (dataDir: string, ...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'ops/cli.ts', ...args], { env: { ...process.env, DATA_DIR: dataDir }, cwd: process.cwd() });

describe('CLI user create (against a running service on the same DATA_DIR)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc.stop());

  it('given a running service, when the CLI creates a user, then that user can log in through the service', async () => {
    const { stdout } = await cli(svc.dataDir, 'user', 'create', '--username', 'cli-user', '--email', 'c@example.com', '--password', 'cli-password-1');
    const { user_laui } = JSON.parse(stdout) as { user_laui: string };
    expect(user_laui).to.match(/^[0-9a-f]{24}$/);
    // The service notices events appended by another process by polling its subscription.
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && !(await svc.service.readStore.collection('users').get(user_laui))) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const { token } = await svc.login('cli-user', 'cli-password-1');
    const me = await svc.client().get('/api/v1/user/me', { token });
    expect(me.json).to.include({ username: 'cli-user', email: 'c@example.com' });
  });

  it('given an existing name, when the CLI creates it again, then it exits non-zero with 409', async () => {
    const failure = await cli(svc.dataDir, 'user', 'create', '--username', 'admin', '--email', 'a@example.com', '--password', 'whatever-123').then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).to.equal(1);
    expect(failure?.stderr).to.include('409').and.include('User already exists');
  });
});

describe('restart of the embedded service', () => {
  it('given users and tokens, when the service restarts on the same DATA_DIR, then read models are rebuilt and tokens stay valid', async () => {
    const first = await startTestService();
    const { token } = await first.login();
    await first.client().post('/api/v1/user/create', { json: { username: 'kept', email: 'k@example.com', password: 'kept-password-1' }, token });
    const before = await first.service.readStore.collection('users').find({ sort: { field: 'username', direction: 'asc' } });
    await first.stop({ keepData: true });

    const second = await startTestService({}, {}, first.dataDir);
    try {
      const after = await second.service.readStore.collection('users').find({ sort: { field: 'username', direction: 'asc' } });
      expect(after).to.deep.equal(before);
      expect(after.map((user) => user.username)).to.deep.equal(['admin', 'kept']);
      const me = await second.client().get('/api/v1/user/me', { token });
      expect(me.status).to.equal(200);
      expect(second.announced.some((line) => line.includes('one-time password'))).to.equal(false);
    } finally {
      await second.stop();
    }
  });

  it('given no ADMIN_PASSWORD, when starting fresh, then a one-time password is announced and must be changed', async () => {
    const svc = await startTestService({ ADMIN_PASSWORD: '' });
    try {
      const line = svc.announced.find((message) => message.includes('one-time password')) ?? '';
      const password = /one-time password: (\S+)/.exec(line)?.[1] ?? '';
      expect(password).to.have.length.greaterThan(11);
      const { client } = await svc.login('admin', password);
      const refresh = await client.post('/api/v1/token', { json: { grant_type: 'refresh_token', credentials: { token_string: client.jar.get('refresh_token') } } });
      expect(refresh.json).to.deep.equal({ must_change_password: true });
    } finally {
      await svc.stop();
    }
  });
});
