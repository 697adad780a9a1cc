import { authHeaders } from './api.ts';

export interface SseMessage {
  event: string;
  data: string;
  id: string | null;
}

/**
 * Reads a Server-Sent Events response through fetch, not EventSource: the event stream of the log
 * (GET /api/v1/events/stream) is a private route and needs the Authorization header, which
 * EventSource cannot send. Resolves when the server ends the stream; rejects on HTTP errors.
 */
export const readSse = async (path: string, onMessage: (message: SseMessage) => void, options: { signal: AbortSignal; lastEventId?: string | null }): Promise<void> => {
  const headers: Record<string, string> = { accept: 'text/event-stream', ...authHeaders() };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(path, { headers, signal: options.signal, credentials: 'same-origin' });
  if (!response.ok || response.body === null) {
    const text = await response.text().catch(() => '');
    let detail = text;
    try {
      detail = String((JSON.parse(text) as { detail?: unknown }).detail ?? text);
    } catch {
      // not JSON: the text as it is
    }
    throw new Error(detail || `HTTP ${response.status}`);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = 'message';
  let data: string[] = [];
  let id: string | null = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let newline = buffer.search(/\r\n|\r|\n/);
    while (newline >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) onMessage({ event, data: data.join('\n'), id });
        event = 'message';
        data = [];
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = text;
        else if (field === 'data') data.push(text);
        else if (field === 'id') id = text;
      }
      newline = buffer.search(/\r\n|\r|\n/);
    }
  }
};
