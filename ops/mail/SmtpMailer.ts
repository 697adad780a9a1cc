import type { ConnectionOptions } from 'node:tls';
import type nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { Mail, Mailer } from '../../shared/ports/Mailer.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { SmtpSettings } from '../config.ts';

/** What a failed send says about itself in the log: nodemailer's error code and the server's reply, never the mail. */
const failureOf = (error: unknown): Record<string, unknown> => {
  if (!(error instanceof Error)) return { error: String(error) };
  const { code, command, responseCode } = error as Error & { code?: unknown; command?: unknown; responseCode?: unknown };
  return { error: error.message, code, command, response_code: responseCode };
};

/**
 * One plain address (no list, no display name, no quoting, no line break). Account emails are free
 * text; `a@x, b@y` must not become two recipients of one user's sign-in code.
 */
const SINGLE_ADDRESS = /^[^\s@<>,;:"()[\]\\]+@[^\s@<>,;:"()[\]\\]+$/;

/**
 * Mail through an SMTP server (SMTP_URL) with nodemailer. smtps:// speaks TLS from the first byte;
 * smtp:// upgrades with STARTTLS whenever the server offers it, and insists on it when there are
 * credentials, so a password never crosses the network in clear (a relay without TLS takes mail
 * only without login). Certificates are checked against the system's CAs (and NODE_EXTRA_CA_CERTS);
 * a failed check fails the send, it never falls back to clear text.
 *
 * One connection per mail (no pool): sign-in mails are rare, and nothing is left open to close.
 * Every send is bounded by SMTP_TIMEOUT_SECONDS as a whole (nodemailer's own timeouts bound each
 * step, and end the connection of a send given up on), so a dead or stalled server costs a request
 * that long and no more. Nothing of the mail's text is logged: it holds a sign-in code.
 */
export class SmtpMailer implements Mailer {
  /**
   * Made at the first send: nodemailer is imported then, not at start (a service that sends no mail
   * never loads it). Shared by later sends, as the transport made in the constructor was.
   */
  private transport: Promise<nodemailer.Transporter<SMTPTransport.SentMessageInfo, SMTPTransport.Options>> | undefined;

  /** `trust`: extra TLS options (a test's own CA); production trusts the system's CAs. */
  constructor(
    private readonly settings: SmtpSettings,
    private readonly from: string,
    private readonly logger: Logger,
    private readonly trust: ConnectionOptions = {},
  ) {}

  private async createTransport(): Promise<nodemailer.Transporter<SMTPTransport.SentMessageInfo, SMTPTransport.Options>> {
    const { default: nodemailer } = await import('nodemailer');
    const { settings, trust } = this;
    const step = settings.timeoutMs;
    return nodemailer.createTransport({
      host: settings.host,
      port: settings.port,
      secure: settings.secure,
      requireTLS: !settings.secure && settings.auth !== null,
      ...(settings.auth === null ? {} : { auth: { user: settings.auth.user, pass: settings.auth.pass } }),
      tls: { minVersion: 'TLSv1.2', ...trust },
      connectionTimeout: step,
      greetingTimeout: step,
      socketTimeout: step,
      dnsTimeout: step,
      // The mail is text built here: no file or URL is ever read into it.
      disableFileAccess: true,
      disableUrlAccess: true,
      logger: false,
      debug: false,
    });
  }

  async send(mail: Mail): Promise<void> {
    if (!SINGLE_ADDRESS.test(mail.to)) {
      this.logger.log({ level: 'error', category: 'API', step: 'mail', message: `Mail (${mail.subject}) was not sent: the recipient is not one plain address`, recipient: mail.to });
      throw new Error('mail not sent: the recipient is not one plain address');
    }
    const transport = await (this.transport ??= this.createTransport());
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from the mail server within ${this.settings.timeoutMs / 1000} s`)), this.settings.timeoutMs);
    });
    try {
      // The losing send still settles (its own timeouts end it); race() has handled its rejection.
      // The envelope is given, not derived from the headers: the server is told this one recipient.
      const envelope = { from: /<([^<>]+)>$/.exec(this.from)?.[1] ?? this.from, to: [mail.to] };
      await Promise.race([transport.sendMail({ from: this.from, to: mail.to, envelope, subject: mail.subject, text: mail.text }), deadline]);
    } catch (error) {
      this.logger.log({
        level: 'error',
        category: 'API',
        step: 'mail',
        message: `Mail to ${mail.to} (${mail.subject}) was not sent through ${this.server()}`,
        ...failureOf(error),
      });
      throw new Error(`mail not sent through ${this.server()}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  private server(): string {
    return `${this.settings.secure ? 'smtps' : 'smtp'}://${this.settings.host}:${this.settings.port}`;
  }
}
