import type { Mail, Mailer } from '../../shared/ports/Mailer.ts';
import type { Logger } from '../../shared/ports/Logger.ts';

/**
 * The stand-in behind MAIL_TRANSPORT=log: writes the mail to the API log, for a trial on one
 * machine without a mail server. With email_totp this puts the sign-in codes in the log file, where
 * whoever reads it can sign in as anyone; the service warns at every start (ops/service.ts).
 */
export class LogMailer implements Mailer {
  constructor(private readonly logger: Logger) {}

  async send(mail: Mail): Promise<void> {
    this.logger.log({ level: 'info', category: 'API', step: 'mail', message: `Mail to ${mail.to}: ${mail.subject}`, mail });
  }
}

/** Keeps mails in memory; tests read the code a user would have received. */
export class CapturingMailer implements Mailer {
  readonly sent: Mail[] = [];

  async send(mail: Mail): Promise<void> {
    this.sent.push(mail);
  }
}
