import type { RawReply } from './rawRequest.ts';

export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** The events of a complete SSE body (comments and frames without data are left out). */
export const sseEvents = (text: string): SseEvent[] =>
  text
    .split('\n\n')
    .map((block) => {
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      return data.length === 0 ? null : { event, data: JSON.parse(data.join('\n')) as Record<string, unknown> };
    })
    .filter((frame): frame is SseEvent => frame !== null);

/** A raw reply's body without its chunked transfer encoding (rawRequest hands it over as sent). */
export const rawBody = (reply: RawReply): string => {
  if (!/^transfer-encoding:\s*chunked/im.test(reply.head)) return reply.body;
  let rest = reply.body;
  let body = '';
  for (;;) {
    const end = rest.indexOf('\r\n');
    if (end < 0) return body;
    const size = Number.parseInt(rest.slice(0, end), 16);
    if (!Number.isFinite(size) || size === 0) return body;
    // Sizes count bytes; the body was decoded as UTF-8: slice by bytes.
    const bytes = Buffer.from(rest.slice(end + 2), 'utf8');
    body += bytes.subarray(0, size).toString('utf8');
    rest = bytes.subarray(size + 2).toString('utf8');
  }
};
