import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/** One mail as the test server received it: the envelope, the raw message and how it came. */
export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  /** The session was TLS (smtps://, or upgraded with STARTTLS) when the message came. */
  secure: boolean;
  /** The user that logged in, or null. */
  user: string | null;
}

export interface LocalSmtpServer {
  /** smtp://127.0.0.1:port or smtps://127.0.0.1:port, without credentials. */
  url: string;
  port: number;
  mails: ReceivedMail[];
  /** AUTH attempts, with whether the session was TLS at that moment (a password in clear would show here). */
  logins: Array<{ user: string; secure: boolean }>;
  /** Waits (generously) until `count` mails came. */
  waitForMails(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export interface SmtpServerOptions {
  /** smtps://: TLS from the first byte (needs `tls`). */
  secure?: boolean;
  /** The server's certificate; on a clear-text server it makes STARTTLS available. */
  tls?: { key: string; cert: string };
  /** Required login; without it mail is taken without login. */
  login?: { user: string; pass: string };
  /** Takes the message, then never answers it (a stalled server). */
  stallAfterData?: boolean;
}

/**
 * A real SMTP server on a free loopback port (the `smtp-server` package), collecting what it
 * receives. Without `tls` STARTTLS is not offered (smtp-server's built-in certificate is expired).
 */
export const startSmtpServer = async (options: SmtpServerOptions = {}): Promise<LocalSmtpServer> => {
  const mails: ReceivedMail[] = [];
  const logins: Array<{ user: string; secure: boolean }> = [];
  const stalled: Array<() => void> = [];
  const serverOptions: SMTPServerOptions = {
    secure: options.secure ?? false,
    ...(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}),
    disabledCommands: options.tls ? [] : ['STARTTLS'],
    authOptional: options.login === undefined,
    // The server would take a password in clear: refusing to send one is the client's part.
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, session, callback) {
      logins.push({ user: auth.username ?? '', secure: session.secure });
      const ok = options.login !== undefined && auth.username === options.login.user && auth.password === options.login.pass;
      callback(ok ? null : new Error('Invalid username or password'), ok ? { user: auth.username } : undefined);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((recipient) => recipient.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          secure: session.secure,
          user: typeof session.user === 'string' ? session.user : null,
        });
        if (options.stallAfterData) stalled.push(() => callback());
        else callback();
      });
    },
  };
  const server = new SMTPServer(serverOptions);
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `${options.secure ? 'smtps' : 'smtp'}://127.0.0.1:${port}`,
    port,
    mails,
    logins,
    waitForMails: (count, timeoutMs = 30_000) => waitFor(() => (mails.length >= count ? mails : null), timeoutMs, `${count} mail(s) (got ${mails.length})`),
    close: async () => {
      for (const answer of stalled) answer();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

/** A TCP server that takes connections and never says a word (an SMTP server that hangs before its greeting). */
export const startSilentServer = async (): Promise<{ url: string; connections: () => number; close(): Promise<void> }> => {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    connections: () => connections,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

const waitFor = async <T>(probe: () => T | null, timeoutMs: number, what: string): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`still waiting for ${what} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

/** A self-signed certificate for localhost and 127.0.0.1 (openssl), valid for a day: the tests' own CA. */
export const selfSignedCertificate = (): { key: string; cert: string } => {
  const dir = mkdtempSync(join(tmpdir(), 'smtp-tls-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** The sign-in code in a mail's body (32 hex digits), or null. */
export const codeInMail = (mail: ReceivedMail): string | null => {
  const body = mail.raw.slice(mail.raw.indexOf('\r\n\r\n') + 4);
  return /\b([0-9a-f]{32})\b/.exec(body)?.[1] ?? null;
};
