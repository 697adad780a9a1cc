import { connect } from 'node:net';
import { recordExchange } from './trafficRecorder.ts';

export interface RawReply {
  /** null when the server closed the connection without answering (it may, for a truncated body). */
  status: number | null;
  head: string;
  body: string;
}

/**
 * One HTTP/1.1 request written byte for byte on its own connection: the path goes out as given
 * (no URL normalisation of `..` or `%`), headers may contradict the body (a Content-Length that is
 * wrong, an encoding the body does not have), which fetch would refuse to send. Reads the answer
 * until the server closes (Connection: close) or `timeoutMs` passes, which rejects.
 */
export const rawRequest = (
  url: string,
  request: {
    method: string;
    path: string;
    headers?: ReadonlyArray<readonly [string, string]>;
    body?: Buffer;
    /**
     * Close our side after this long without an answer: for a Content-Length larger than the body,
     * where the server waits for bytes that never come. Not sooner: the server drops a request
     * whose client has closed, so a slow answer would be lost.
     */
    endAfterMs?: number;
    /** Stop reading once the status line and headers are in: for a stream that never ends (SSE). */
    headOnly?: boolean;
  },
  timeoutMs = 20_000,
): Promise<RawReply> => {
  const { hostname, port } = new URL(url);
  const body = request.body ?? Buffer.alloc(0);
  const headers = [['Host', `${hostname}:${port}`], ['Connection', 'close'], ...(request.headers ?? [])];
  if (!headers.some(([name]) => name.toLowerCase() === 'content-length') && (body.length > 0 || request.method !== 'GET')) headers.push(['Content-Length', String(body.length)]);
  const head = `${request.method} ${request.path} HTTP/1.1\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port) });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms to ${request.method} ${request.path.slice(0, 200)}`));
    }, timeoutMs);
    let ender: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
      if (request.endAfterMs !== undefined) ender = setTimeout(() => socket.end(), request.endAfterMs);
    });
    socket.on('data', (chunk: Buffer) => {
      clearTimeout(ender);
      chunks.push(chunk);
      if (request.headOnly && Buffer.concat(chunks).includes('\r\n\r\n')) socket.destroy();
    });
    socket.on('error', () => {
      // A reset after the server answered (or refused): what was read so far is the answer.
    });
    socket.on('close', () => {
      clearTimeout(timer);
      clearTimeout(ender);
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
      const reply = { head: split < 0 ? text : text.slice(0, split), body: split < 0 ? '' : text.slice(split + 4) };
      if (match) record(request.method, request.path, { ...reply, status: Number(match[1]) }, request.headOnly === true);
      resolve({ status: match ? Number(match[1]) : null, ...reply });
    });
  });
};

const headerOf = (head: string, name: string): string | null => {
  const line = head.split('\r\n').find((entry) => entry.toLowerCase().startsWith(`${name}:`));
  return line === undefined ? null : line.slice(name.length + 1).trim();
};

/** A chunked body as its content (what a client reads); the text as it was when it is not well formed. */
const dechunked = (body: string): string => {
  let rest = body;
  let content = '';
  for (;;) {
    const end = rest.indexOf('\r\n');
    const size = end < 0 ? NaN : parseInt(rest.slice(0, end), 16);
    if (Number.isNaN(size)) return body;
    if (size === 0) return content;
    content += rest.slice(end + 2, end + 2 + size);
    rest = rest.slice(end + 2 + size + 2);
  }
};

/** For the OpenAPI conformance check (test/support/trafficRecorder.ts): the answer as a client reads it. */
const record = (method: string, path: string, reply: RawReply & { status: number }, headOnly: boolean): void => {
  const chunked = /chunked/i.test(headerOf(reply.head, 'transfer-encoding') ?? '');
  // A compressed body read as UTF-8 is not its content: recorded as not read.
  const encoded = !/^(?:identity)?$/i.test(headerOf(reply.head, 'content-encoding') ?? '');
  recordExchange({
    method,
    url: path,
    status: reply.status,
    contentType: headerOf(reply.head, 'content-type'),
    body: headOnly || encoded ? null : chunked ? dechunked(reply.body) : reply.body,
  });
};
