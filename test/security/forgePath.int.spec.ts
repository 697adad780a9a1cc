import { expect } from 'chai';
import { createPrivateKey, randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser } from '../support/catalogFixture.ts';

/**
 * Issue 19, as an attacker would: an action run by a signed-in user reads DATA_DIR/keys/jwt-private.pem
 * and /proc/<service pid>/environ (ADMIN_PASSWORD), signs an RS256 access token for the admin's laui
 * and presents it. With the default configuration (the service as root: run processes get another
 * uid), every step fails: nothing is read, and the token it can sign (with its own key) is refused.
 */
const FORGE = `
const fs = require('node:fs');
const crypto = require('node:crypto');

exports.run = (connection, variables) => {
  const attempt = (what) => { try { return what(); } catch (error) { return null; } };
  const key = attempt(() => fs.readFileSync(variables.dataDir + '/keys/jwt-private.pem', 'utf8'));
  const events = attempt(() => fs.readFileSync(variables.dataDir + '/events.sqlite').length);
  const environ = attempt(() => fs.readFileSync('/proc/' + variables.servicePid + '/environ', 'latin1'));
  const signingKey = key ?? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
  const now = Math.floor(Date.now() / 1000);
  const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = part({ alg: 'RS256', typ: 'JWT' }) + '.' + part({ iss: 'pipeline-orchestrator', aud: 'access', sub: variables.adminLaui, iat: now, exp: now + 3600, jti: crypto.randomUUID() });
  const token = body + '.' + crypto.sign('RSA-SHA256', Buffer.from(body), signingKey).toString('base64url');
  return { key, events, environ, token };
};
`;

function forgeWith(pem: string, adminLaui: string): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iss: 'pipeline-orchestrator', aud: 'access', sub: adminLaui, iat: now, exp: now + 3600, jti: randomUUID() })}`;
  return `${body}.${sign('RSA-SHA256', Buffer.from(body), createPrivateKey(pem)).toString('base64url')}`;
}

describe('Forge path: an action cannot become the admin (issue 19)', function () {
  this.timeout(120_000);
  let svc: TestService;

  before(async function () {
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: the default sandbox needs a service running as root; not root here)');
      this.skip();
    }
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  it('given a signed-in user, when an action reads the key and the service environment and signs an admin token, then nothing is read and the token is refused', async () => {
    // Given: the admin, and a user with a project of their own
    const adminLogin = await svc.login();
    const me = await svc.client().get('/api/v1/user/me', { token: adminLogin.token });
    expect(me.status, me.text).to.equal(200);
    const adminLaui = String((me.json as { laui?: string; user_laui?: string }).laui ?? (me.json as { user_laui?: string }).user_laui);
    const user = await createUser(svc, adminLogin.token, 'mallory');
    const mallory = catalogClient(svc, user.token);
    const tree = await mallory.bootstrap('mallory-co');
    const folder = await mallory.createOk({ item_type: 'folder.workflow', name: 'tools', parent_laui: tree.folders.workflow });
    // The claims below are what the service accepts: signed with the real key, such a token is the admin.
    const realKey = readFileSync(join(svc.dataDir, 'keys', 'jwt-private.pem'), 'utf8');
    const control = await svc.client().get('/api/v1/user/me', { token: forgeWith(realKey, adminLaui) });
    expect(control.status, control.text).to.equal(200);

    // When: the action runs
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

    // Then: it ran, read nothing, and its token does not pass
    expect(reply.status, reply.text).to.equal(200);
    const result = (reply.json as { result: { key: string | null; events: number | null; environ: string | null; token: string } }).result;
    expect(result.key).to.equal(null);
    expect(result.events).to.equal(null);
    expect(result.environ).to.equal(null);
    const forged = await svc.client().get('/api/v1/user/me', { token: result.token });
    expect(forged.status, forged.text).to.equal(401);
  });
});
