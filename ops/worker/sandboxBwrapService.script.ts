/**
 * The service itself, not running as root (sandboxBwrap.int.spec.ts starts this as an unprivileged
 * uid with WORKER_SANDBOX from its environment): issue 19's forge path through POST
 * /api/v1/action/run (test/security/forgePath.int.spec.ts does the same as root). Prints one JSON
 * line: what the action could read and whether its forged admin token passed.
 * Input (environment): BWRAP_SPEC_DATA_DIR, WORKER_SANDBOX, WORKER_NETWORK (unset: the default), BWRAP_SPEC_SECRET (in this process's
 * environment: the action looks for it in /proc/<this pid>/environ).
 */
import { catalogClient, createUser } from '../../test/support/catalogFixture.ts';
import { startTestService } from '../../test/support/testService.ts';

const FORGE = `
const fs = require('node:fs');
const crypto = require('node:crypto');

exports.run = (connection, variables) => {
  const attempt = (what) => { try { return what(); } catch (error) { return null; } };
  const key = attempt(() => fs.readFileSync(variables.dataDir + '/keys/jwt-private.pem', 'utf8'));
  const events = attempt(() => fs.readFileSync(variables.dataDir + '/events.sqlite').length);
  const environ = attempt(() => fs.readFileSync('/proc/' + variables.servicePid + '/environ', 'latin1'));
  const environs = fs.readdirSync('/proc').filter((name) => /^\\d+$/.test(name))
    .map((pid) => attempt(() => fs.readFileSync('/proc/' + pid + '/environ', 'latin1'))).filter(Boolean).join('\\n');
  const signingKey = key ?? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
  const now = Math.floor(Date.now() / 1000);
  const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = part({ alg: 'RS256', typ: 'JWT' }) + '.' + part({ iss: 'pipeline-orchestrator', aud: 'access', sub: variables.adminLaui, iat: now, exp: now + 3600, jti: crypto.randomUUID() });
  const token = body + '.' + crypto.sign('RSA-SHA256', Buffer.from(body), signingKey).toString('base64url');
  return { key, events, environ, environs, token };
};
`;

async function main(): Promise<void> {
  const svc = await startTestService(
    { WORKER_SANDBOX: process.env.WORKER_SANDBOX ?? 'auto', ...(process.env.WORKER_NETWORK ? { WORKER_NETWORK: process.env.WORKER_NETWORK } : {}) },
    {},
    process.env.BWRAP_SPEC_DATA_DIR,
  );
  try {
    const adminLogin = await svc.login();
    const me = await svc.client().get('/api/v1/user/me', { token: adminLogin.token });
    const adminLaui = String((me.json as { laui?: string; user_laui?: string }).laui ?? (me.json as { user_laui?: string }).user_laui);
    const user = await createUser(svc, adminLogin.token, 'mallory');
    const mallory = catalogClient(svc, user.token);
    const tree = await mallory.bootstrap('mallory-co');
    const folder = await mallory.createOk({ item_type: 'folder.workflow', name: 'tools', parent_laui: tree.folders.workflow });
    const reply = await svc.client().post('/api/v1/action/run', {
      token: user.token,
      json: {
        item_type: 'action',
        name: 'forge.action',
        parent_laui: folder,
        project_laui: tree.project_laui,
        account_laui: tree.account_laui,
        codeblock: { language: 'javascript', content: FORGE },
        bashblock: { content: '' },
        action_variables: { dataDir: svc.dataDir, servicePid: process.pid, adminLaui },
      },
    });
    const result = (reply.json as { result?: { token?: string } }).result;
    const forged = result?.token ? await svc.client().get('/api/v1/user/me', { token: result.token }) : null;
    process.stdout.write(`${JSON.stringify({ status: reply.status, result, forgedStatus: forged?.status ?? null, announced: svc.announced })}\n`);
  } finally {
    await svc.stop({ keepData: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
