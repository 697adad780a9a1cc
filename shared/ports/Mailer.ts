export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Outbound mail (login codes in email_totp mode). The default adapter writes to the log. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
}
