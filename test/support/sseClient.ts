import { request, type IncomingMessage } from 'node:http';
import { recordExchange } from './trafficRecorder.ts';

export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
}

/**
 * A Server-Sent Events reader for tests: frames and comment lines as they arrive, a way to stop
 * reading (pause: the socket fills, as with a slow client), and waits on conditions.
 */
export class SseClient {
  readonly frames: SseFrame[] = [];
  readonly comments: string[] = [];
  status = 0;
  ended = false;
  private buffer = '';
  private response: IncomingMessage | null = null;
  private readonly changed = new Set<() => void>();
  private readonly closeRequest: () => void;

  private constructor(url: URL, headers: Record<string, string>) {
    const req = request(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      this.response = res;
      this.status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      // For the OpenAPI conformance check (trafficRecorder.ts): a stream by its head, any other answer (a refusal) whole.
      const contentType = res.headers['content-type'] ?? null;
      const streamed = /^text\/event-stream/i.test(contentType ?? '');
      let text = '';
      if (streamed) recordExchange({ method: 'GET', url, status: this.status, contentType, body: null });
      res.on('data', (chunk: string) => {
        if (!streamed) text += chunk;
        this.receive(chunk);
      });
      res.on('end', () => {
        if (!streamed) recordExchange({ method: 'GET', url, status: this.status, contentType, body: text });
        this.finish();
      });
      res.on('close', () => this.finish());
      res.on('error', () => this.finish());
      this.notify();
    });
    req.on('error', () => this.finish());
    req.end();
    this.closeRequest = () => req.destroy();
  }

  static open(baseUrl: string, path: string, headers: Record<string, string> = {}): SseClient {
    return new SseClient(new URL(path, baseUrl), headers);
  }

  get events(): Array<{ id: string; event: string; data: Record<string, unknown> }> {
    return this.frames
      .filter((frame) => frame.data !== undefined)
      .map((frame) => ({ id: frame.id ?? '', event: frame.event ?? 'message', data: JSON.parse(frame.data ?? 'null') as Record<string, unknown> }));
  }

  pause(): void {
    this.response?.pause();
  }

  resume(): void {
    this.response?.resume();
  }

  close(): void {
    this.closeRequest();
  }

  async waitFor(condition: () => boolean, timeoutMs = 20_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`SSE: timed out waiting for ${what}; got ${this.frames.length} frames, ended=${this.ended}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 100);
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.changed.add(done);
      });
    }
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const frame: SseFrame = {};
      let hasField = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.comments.push(line.slice(1).trim());
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id' || field === 'event' || field === 'data') {
          frame[field] = field === 'data' && frame.data !== undefined ? `${frame.data}\n${value}` : value;
          hasField = true;
        }
      }
      if (hasField) this.frames.push(frame);
    }
    this.notify();
  }

  private finish(): void {
    this.ended = true;
    this.notify();
  }

  private notify(): void {
    for (const listener of [...this.changed]) listener();
    this.changed.clear();
  }
}
