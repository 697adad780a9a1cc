import type { Mail, Mailer } from '../../shared/ports/Mailer.ts';
import type { Logger } from '../../shared/ports/Logger.ts';

/**
 * Default mail adapter: writes the mail to the API log, for single-machine setups without SMTP.
 * With email_totp enabled this puts the sign-in code in the log file, so give the log directory
 * the same protection as the mailbox (see README, operations).
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
