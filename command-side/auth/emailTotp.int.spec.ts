import { expect } from 'chai';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN, startTestService, type TestService } from '../../test/support/testService.ts';
import { codeInMail, startSmtpServer, type LocalSmtpServer } from '../../test/support/smtpServer.ts';
import type { HttpClient, Reply } from '../../test/support/HttpClient.ts';

/**
 * EMAIL_TOTP for real (spec 5.3 step 3): the service mails the sign-in code through SMTP_URL to a
 * local SMTP server the tests start; the redirect carries the state alone, and the mailed code
 * redeems at POST /token.
 */
const FROM = 'orchestrator@example.test';
const BOB = { username: 'bob', password: 'bob-password-1', email: 'Bob@example.test' };

/** Steps 1-3 of the login flow; returns the client (with its cookies) and redirect-with-code's answer. */
const startSignIn = async (svc: TestService, username: string, password: string): Promise<{ client: HttpClient; reply: Reply }> => {
  const client = svc.client();
  await client.get('/api/v1/auth?client_id=web&redirect_uri=http://localhost/cb&state=s9');
  const login = await client.post('/api/v1/login', { form: { username, password } });
  expect(login.status, login.text).to.equal(303);
  return { client, reply: await client.get(login.headers.get('location') ?? '') };
};

/** Every log line the service wrote (LOG_DIR), once its buffered lines are on disk. */
const allLogs = async (svc: TestService): Promise<string> => {
  await svc.service.logger.flush();
  const root = svc.config.logDir;
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'))
    .join('\n');
};

describe('email_totp: sign-in codes by mail (HTTP, embedded service, a local SMTP server)', function () {
  this.timeout(120_000);

  describe('a mail server that takes the mail', () => {
    let smtp: LocalSmtpServer;
    let svc: TestService;
    /** The whole flow for a user, the code read from the mail the server received. */
    const mailedSignIn = async (username: string, password: string): Promise<{ client: HttpClient; token: string }> => {
      const before = smtp.mails.length;
      const { client, reply } = await startSignIn(svc, username, password);
      expect(reply.status, reply.text).to.equal(303);
      const mail = (await smtp.waitForMails(before + 1))[before];
      const code = mail ? codeInMail(mail) : null;
      const token = await client.post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } } });
      expect(token.status, token.text).to.equal(200);
      return { client, token: client.jar.get('frontend_token') ?? '' };
    };

    before(async () => {
      smtp = await startSmtpServer();
      svc = await startTestService({ EMAIL_TOTP: 'true', SMTP_URL: smtp.url, MAIL_FROM: FROM, MAIL_MAX_PER_ADDRESS_PER_HOUR: '3' });
      const admin = await mailedSignIn(ADMIN.username, ADMIN.password);
      const created = await svc.client().post('/api/v1/user/create', {
        json: { username: BOB.username, email: BOB.email, password: BOB.password, must_change_password: false },
        token: admin.token,
      });
      expect(created.status, created.text).to.equal(200);
    });
    after(async () => {
      await svc?.stop();
      await smtp?.close();
    });

    it('given a user signing in, when the flow redirects, then only state is sent, the code arrives at that user\'s address from MAIL_FROM, and it redeems at POST /token once', async () => {
      const before = smtp.mails.length;
      const { client, reply } = await startSignIn(svc, BOB.username, BOB.password);
      expect(reply.status).to.equal(303);
      const target = new URL(reply.headers.get('location') ?? '');
      expect(`${target.origin}${target.pathname}`).to.equal('http://localhost/cb');
      expect([...target.searchParams]).to.deep.equal([['state', 's9']]);
      const mail = (await smtp.waitForMails(before + 1))[before];
      expect(mail?.to).to.deep.equal([BOB.email]);
      expect(mail?.from).to.equal(FROM);
      expect(mail?.raw).to.match(/^Subject: Your sign-in code\r$/m);
      const code = mail ? codeInMail(mail) : null;
      expect(code).to.match(/^[0-9a-f]{32}$/);
      expect(reply.text + JSON.stringify([...reply.headers])).to.not.include(code);

      const token = await client.post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } } });
      expect(token.status, token.text).to.equal(200);
      expect(token.json).to.deep.equal({ must_change_password: false });
      const me = await svc.client().get('/api/v1/user/me', { token: client.jar.get('frontend_token') ?? '' });
      expect((me.json as { username: string }).username).to.equal(BOB.username);
      const again = await svc.client().post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } } });
      expect(again.status).to.equal(401);
      expect(await allLogs(svc)).to.not.include(code);
    });

    it('given MAIL_MAX_PER_ADDRESS_PER_HOUR=3, when one address would get a fourth mail within the hour, then 429 with Retry-After, and no mail nor code goes out', async () => {
      const carol = { username: 'carol', password: 'carol-password-1' };
      const admin = await mailedSignIn(ADMIN.username, ADMIN.password);
      const created = await svc.client().post('/api/v1/user/create', {
        json: { username: carol.username, email: 'carol@example.test', password: carol.password, must_change_password: false },
        token: admin.token,
      });
      expect(created.status, created.text).to.equal(200);
      for (let round = 0; round < 3; round += 1) expect((await startSignIn(svc, carol.username, carol.password)).reply.status).to.equal(303);
      const mailed = smtp.mails.filter((mail) => mail.to.includes('carol@example.test')).length;
      expect(mailed).to.equal(3);
      const { reply } = await startSignIn(svc, carol.username, carol.password);
      expect(reply.status).to.equal(429);
      expect(reply.json).to.deep.equal({ detail: 'Too many sign-in codes were mailed to this address, try again later' });
      expect(Number(reply.headers.get('retry-after'))).to.be.greaterThan(0);
      // Another address is not held by carol's count (each mail was taken before its redirect answered).
      expect((await startSignIn(svc, BOB.username, BOB.password)).reply.status).to.equal(303);
      expect(smtp.mails.filter((mail) => mail.to.includes('carol@example.test'))).to.have.length(3);
    });
  });

  it('given a mail server that takes the message and never answers, when a user signs in, then 503 with a detail body and Retry-After, and the code is neither in the answer nor in the log', async () => {
    const smtp = await startSmtpServer({ stallAfterData: true });
    const svc = await startTestService({ EMAIL_TOTP: 'true', SMTP_URL: smtp.url, MAIL_FROM: FROM, SMTP_TIMEOUT_SECONDS: '1' });
    try {
      const { reply } = await startSignIn(svc, ADMIN.username, ADMIN.password);
      expect(reply.status).to.equal(503);
      expect(reply.json).to.deep.equal({ detail: 'The sign-in code could not be sent by mail: the mail server did not take it. Try again in a minute' });
      expect(reply.headers.get('retry-after')).to.equal('60');
      // The stalled server did receive the code: it must not show anywhere else.
      const mail = (await smtp.waitForMails(1))[0];
      const code = mail ? codeInMail(mail) : null;
      expect(code).to.match(/^[0-9a-f]{32}$/);
      expect(reply.text + JSON.stringify([...reply.headers])).to.not.include(code);
      const logs = await allLogs(svc);
      expect(logs).to.include('was not sent through').and.not.include(code);
    } finally {
      await svc.stop();
      await smtp.close();
    }
  });

  it('given EMAIL_TOTP=true and no SMTP_URL, when the service starts, then it refuses, naming SMTP_URL, MAIL_FROM and MAIL_TRANSPORT=log', async () => {
    const started = await startTestService({ EMAIL_TOTP: 'true' }).then(
      async (svc) => {
        await svc.stop();
        return null;
      },
      (error: unknown) => error,
    );
    expect(started).to.be.instanceOf(Error);
    expect((started as Error).message).to.include('SMTP_URL').and.include('MAIL_FROM').and.include('MAIL_TRANSPORT=log');
  });

  it('given MAIL_TRANSPORT=log, when the service starts with EMAIL_TOTP, then it warns that codes go to the log, and the code it logs redeems', async () => {
    const svc = await startTestService({ EMAIL_TOTP: 'true', MAIL_TRANSPORT: 'log' });
    try {
      expect(svc.announced.join('\n')).to.include('WARNING: MAIL_TRANSPORT=log: sign-in codes are written to the service log');
      const { client, reply } = await startSignIn(svc, ADMIN.username, ADMIN.password);
      expect(reply.status).to.equal(303);
      const code = /Your sign-in code is ([0-9a-f]{32})/.exec(await allLogs(svc))?.[1];
      const token = await client.post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } } });
      expect(token.status, token.text).to.equal(200);
    } finally {
      await svc.stop();
    }
  });
});
