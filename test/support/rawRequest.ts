import { connect } from 'node:net';

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
      resolve({ status: match ? Number(match[1]) : null, head: split < 0 ? text : text.slice(0, split), body: split < 0 ? '' : text.slice(split + 4) });
    });
  });
};
