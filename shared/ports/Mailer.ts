export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Outbound mail (login codes in email_totp mode): SMTP (ops/mail/SmtpMailer.ts), or the log
 * stand-in behind MAIL_TRANSPORT=log. `send` resolves once the mail server took the mail and
 * rejects when it did not, within the adapter's time bound; its errors never carry the mail's text.
 */
export interface Mailer {
  send(mail: Mail): Promise<void>;
}
