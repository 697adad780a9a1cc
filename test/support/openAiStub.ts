import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the stub received: its parsed body and headers. */
export interface StubRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

/** What the stub answers: a completion's message (and finish_reason), or an error body with its status. */
export type StubAnswer = (
  | { content?: string | null; finish_reason?: string; tool_calls?: Array<{ id?: string; name: string; arguments: string }> }
  | { status: number; error: { message: string; type?: string; code?: string | null; param?: string | null } }
) & { /** Answer this much later (a slow provider). */ delayMs?: number };

/**
 * A local OpenAI-compatible server for tests (node http on loopback): POST /v1/chat/completions
 * answers in the real response shape (id, object, created, model, choices[{index, message{role,
 * content, tool_calls}, finish_reason, logprobs}], usage), with answers given by the test, in order
 * (the last one repeats), or an OpenAI-style error body `{error: {message, type, param, code}}`.
 */
export class OpenAiStub {
  readonly requests: StubRequest[] = [];
  private answers: StubAnswer[] = [{ content: 'hello' }];
  private server: Server | null = null;
  url = '';

  /** The answers of the next requests, in order; the last one is repeated. */
  answer(...answers: StubAnswer[]): void {
    this.answers = answers;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
        this.requests.push({ path: req.url ?? '', headers: req.headers, body });
        let delayMs = 0;
        const send = (status: number, json: unknown) => {
          const write = () => {
            if (res.destroyed) return;
            res.writeHead(status, { 'content-type': 'application/json' });
            res.end(JSON.stringify(json));
          };
          if (delayMs > 0) setTimeout(write, delayMs).unref();
          else write();
        };
        if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
          send(404, { error: { message: `no route ${req.method ?? ''} ${req.url ?? ''}`, type: 'invalid_request_error', param: null, code: null } });
          return;
        }
        const answer = (this.answers.length > 1 ? this.answers.shift() : this.answers[0]) ?? { content: '' };
        delayMs = answer.delayMs ?? 0;
        if ('status' in answer) {
          send(answer.status, { error: { type: 'invalid_request_error', param: null, code: null, ...answer.error } });
          return;
        }
        const calls = (answer.tool_calls ?? []).map((call, index) => ({ id: call.id ?? `call_stub_${index}`, type: 'function', function: { name: call.name, arguments: call.arguments } }));
        send(200, {
          id: `chatcmpl-${this.requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: typeof body.model === 'string' ? body.model : 'stub',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: answer.content === undefined ? null : answer.content, refusal: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
              logprobs: null,
              finish_reason: answer.finish_reason ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        });
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
