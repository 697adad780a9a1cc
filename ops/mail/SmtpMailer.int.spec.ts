import { expect } from 'chai';
import type { LogEntry, Logger } from '../../shared/ports/Logger.ts';
import type { SmtpSettings } from '../config.ts';
import { SmtpMailer } from './SmtpMailer.ts';
import { selfSignedCertificate, startSilentServer, startSmtpServer, type LocalSmtpServer } from '../../test/support/smtpServer.ts';

/**
 * The SMTP adapter against a real SMTP server on loopback (smtp-server): implicit TLS, STARTTLS,
 * credentials never in clear, certificates checked, and every send bounded.
 */
const CODE = '0123456789abcdef0123456789abcdef';
const MAIL = { to: 'ada@example.test', subject: 'Your sign-in code', text: `Your sign-in code is ${CODE}. It expires in 5 minutes.` };
const LOGIN = { user: 'mailer', pass: 'p@ss:word' };
const FROM = 'Orchestrator <orchestrator@example.test>';

const settingsFor = (server: { url: string }, overrides: Partial<SmtpSettings> = {}): SmtpSettings => {
  const url = new URL(server.url);
  return { secure: url.protocol === 'smtps:', host: url.hostname, port: Number(url.port), auth: null, timeoutMs: 10_000, ...overrides };
};

describe('SmtpMailer (a local SMTP server)', function () {
  this.timeout(60_000);
  const certificate = selfSignedCertificate();
  let entries: LogEntry[];
  let logger: Logger;
  let server: LocalSmtpServer | null;
  const loggedText = () => JSON.stringify(entries);

  beforeEach(() => {
    entries = [];
    logger = { log: (entry) => void entries.push(entry), flush: async () => undefined };
    server = null;
  });
  afterEach(async () => server?.close());

  it('given smtps:// with credentials, when a mail is sent, then it arrives over TLS, logged in, at the recipient, from MAIL_FROM', async () => {
    server = await startSmtpServer({ secure: true, tls: certificate, login: LOGIN });
    await new SmtpMailer(settingsFor(server, { auth: LOGIN }), FROM, logger, { ca: certificate.cert }).send(MAIL);
    const [mail] = await server.waitForMails(1);
    expect(mail?.to).to.deep.equal(['ada@example.test']);
    expect(mail?.from).to.equal('orchestrator@example.test');
    expect(mail?.secure).to.equal(true);
    expect(mail?.user).to.equal('mailer');
    expect(mail?.raw).to.include(CODE);
    expect(server.logins).to.deep.equal([{ user: 'mailer', secure: true }]);
  });

  it('given smtp:// to a server offering STARTTLS, when a mail is sent with credentials, then the session is upgraded before the login', async () => {
    server = await startSmtpServer({ tls: certificate, login: LOGIN });
    await new SmtpMailer(settingsFor(server, { auth: LOGIN }), FROM, logger, { ca: certificate.cert }).send(MAIL);
    const [mail] = await server.waitForMails(1);
    expect(mail?.secure).to.equal(true);
    expect(server.logins).to.deep.equal([{ user: 'mailer', secure: true }]);
  });

  it('given smtp:// to a server offering STARTTLS and no credentials, when a mail is sent, then it still goes over TLS', async () => {
    server = await startSmtpServer({ tls: certificate });
    await new SmtpMailer(settingsFor(server), FROM, logger, { ca: certificate.cert }).send(MAIL);
    expect((await server.waitForMails(1))[0]?.secure).to.equal(true);
  });

  it('given smtp:// to a server without STARTTLS, when a mail is sent with credentials, then it fails and the password never crosses in clear', async () => {
    server = await startSmtpServer({ login: LOGIN });
    const sent = await new SmtpMailer(settingsFor(server, { auth: LOGIN }), FROM, logger).send(MAIL).then(() => 'sent', (error: unknown) => error);
    expect(sent).to.be.instanceOf(Error);
    expect(server.logins).to.deep.equal([]);
    expect(server.mails).to.deep.equal([]);
  });

  it('given smtp:// to a relay without STARTTLS nor login, when a mail is sent, then the relay takes it in clear', async () => {
    server = await startSmtpServer();
    await new SmtpMailer(settingsFor(server), FROM, logger).send(MAIL);
    const [mail] = await server.waitForMails(1);
    expect(mail?.secure).to.equal(false);
    expect(mail?.to).to.deep.equal(['ada@example.test']);
  });

  it('given a recipient that is a list of addresses, when a mail is sent, then nothing is sent to any of them', async () => {
    server = await startSmtpServer();
    const mailer = new SmtpMailer(settingsFor(server), FROM, logger);
    for (const to of ['ada@example.test, eve@example.test', 'Ada <eve@example.test>', 'ada@example.test\r\nBcc: eve@example.test']) {
      const sent = await mailer.send({ ...MAIL, to }).then(() => 'sent', (error: unknown) => error);
      expect(sent, to).to.be.instanceOf(Error);
    }
    expect(server.mails).to.deep.equal([]);
    expect(loggedText()).to.not.include(CODE);
  });

  it('given a server whose certificate is not trusted, when a mail is sent, then it fails without falling back to clear text, and the log holds no code', async () => {
    server = await startSmtpServer({ tls: certificate });
    const sent = await new SmtpMailer(settingsFor(server), FROM, logger).send(MAIL).then(() => 'sent', (error: unknown) => error);
    expect(sent).to.be.instanceOf(Error);
    expect(server.mails).to.deep.equal([]);
    expect(entries.map((entry) => entry.level)).to.deep.equal(['error']);
    expect(loggedText()).to.include('ada@example.test').and.not.include(CODE);
  });

  it('given a server that never greets, when a mail is sent, then the send gives up with an error naming the server, and nothing of the mail is logged', async () => {
    const silent = await startSilentServer();
    try {
      const sent = await new SmtpMailer(settingsFor(silent, { timeoutMs: 1000 }), FROM, logger).send(MAIL).then(() => 'sent', (error: unknown) => error);
      expect(sent).to.be.instanceOf(Error);
      expect((sent as Error).message).to.equal(`mail not sent through ${silent.url}`);
      expect(silent.connections()).to.equal(1);
      expect(loggedText()).to.not.include(CODE);
    } finally {
      await silent.close();
    }
  });

  it('given a server that takes the message and never answers it, when a mail is sent, then the send gives up, and the log holds no code', async () => {
    server = await startSmtpServer({ stallAfterData: true });
    const sent = await new SmtpMailer(settingsFor(server, { timeoutMs: 1000 }), FROM, logger).send(MAIL).then(() => 'sent', (error: unknown) => error);
    expect(sent).to.be.instanceOf(Error);
    // The code did leave (the server holds it); the service's log does not.
    expect((await server.waitForMails(1))[0]?.raw).to.include(CODE);
    expect(loggedText()).to.not.include(CODE);
  });
});
