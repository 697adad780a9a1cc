import type { Mailer } from '../../shared/ports/Mailer.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { MailConfig } from '../config.ts';
import { LogMailer } from './LogMailer.ts';
import { SmtpMailer } from './SmtpMailer.ts';

/**
 * The mailer MAIL_TRANSPORT and SMTP_URL name. Without either nothing is mailed: loadConfig refuses
 * EMAIL_TOTP then, so this mailer is never asked to send; if it were, the request fails (503).
 */
export const createMailer = (config: MailConfig, logger: Logger): Mailer => {
  switch (config.transport) {
    case 'smtp':
      return new SmtpMailer(config.smtp, config.from, logger);
    case 'log':
      return new LogMailer(logger);
    case 'none':
      return { send: () => Promise.reject(new Error('no mail transport: set SMTP_URL and MAIL_FROM')) };
  }
};
