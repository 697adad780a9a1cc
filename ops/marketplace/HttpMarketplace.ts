import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import type { Marketplace, MarketplaceFetch } from '../../shared/ports/Marketplace.ts';
import { MASK } from '../../shared/item-types/secretFields.ts';
import { exceedsDepth, JSON_MAX_DEPTH } from '../../shared/validation/jsonDepth.ts';

export interface HttpMarketplaceSettings {
  /** MARKETPLACE_URL as ops/config.ts checked it: http(s), no credentials, query or fragment, no trailing slash. */
  url: string;
  /** Name resolution plus TCP (plus TLS) handshake: the spec's 10 s. */
  connectTimeoutMs: number;
  /** The whole exchange, from the request to the last byte of the answer (MARKETPLACE_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** Bytes of answer read at most (MARKETPLACE_MAX_BYTES): past it the fetch stops, unread. */
  maxBytes: number;
  /** Tests only: a resolver; one that never answers keeps the connect phase open. */
  lookup?: LookupFunction;
}

/** How much of a failed answer's `detail` a reason quotes. */
const DETAIL_CHARS = 200;

const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(3))} s`;

/**
 * The marketplace over HTTP(S), with node's own client so that every limit is this file's:
 * - one fresh connection per fetch (no agent: a connection is never shared between two users' tokens);
 * - connect timeout (DNS, TCP, TLS) and a total timeout, both answered `unreachable`;
 * - redirects are never followed: the Authorization header must reach MARKETPLACE_URL's host only,
 *   and a redirect to that same host could still downgrade https to http. A 3xx is a `bad_answer`
 *   telling the operator to set MARKETPLACE_URL to the final address;
 * - the answer is read up to `maxBytes` and dropped past it (a declared Content-Length over the cap is
 *   refused before any byte is read), then parsed only if it is within JSON_MAX_DEPTH;
 * - TLS certificates are verified as node does by default (NODE_EXTRA_CA_CERTS for a private CA);
 *   there is no switch to turn that off.
 * No reason it gives quotes the token: a marketplace's `detail` (the only text of its body quoted)
 * has any occurrence of the token masked, in case the marketplace echoes what it was sent.
 */
export class HttpMarketplace implements Marketplace {
  readonly url: string;

  constructor(private readonly settings: HttpMarketplaceSettings) {
    this.url = settings.url;
  }

  fetchItem(itemId: string, token: string): Promise<MarketplaceFetch> {
    const target = new URL(`${this.url}/api/v1/catalog/get`);
    target.searchParams.set('item_laui', itemId);
    const https = target.protocol === 'https:';
    const scrub = (text: string): string => (token.length > 0 ? text.split(token).join(MASK) : text);

    return new Promise<MarketplaceFetch>((resolve) => {
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      const timers: NodeJS.Timeout[] = [];
      let destroy: () => void = () => undefined;
      const finish = (result: MarketplaceFetch): void => {
        if (settled) return;
        settled = true;
        clearTimeout(connectTimer);
        for (const timer of timers) clearTimeout(timer);
        destroy();
        resolve(result.kind === 'unreachable' || result.kind === 'bad_answer' ? { ...result, reason: scrub(result.reason) } : result);
      };

      const onResponse = (response: IncomingMessage): void => {
        const status = response.statusCode ?? 0;
        if (status === 401 || status === 403) return finish({ kind: 'unauthorized', status });
        if (status === 404) return finish({ kind: 'not_found' });
        if (status >= 300 && status < 400) {
          return finish({ kind: 'bad_answer', reason: `HTTP ${status}: redirects are not followed (the token goes to MARKETPLACE_URL only); set MARKETPLACE_URL to the address the marketplace answers at` });
        }
        const declared = Number(response.headers['content-length']);
        if (Number.isFinite(declared) && declared > this.settings.maxBytes) {
          return finish({ kind: 'bad_answer', reason: `HTTP ${status}: the answer is larger than ${this.settings.maxBytes} bytes` });
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > this.settings.maxBytes) finish({ kind: 'bad_answer', reason: `HTTP ${status}: the answer is larger than ${this.settings.maxBytes} bytes` });
          else chunks.push(chunk);
        });
        response.on('error', (error) => finish({ kind: 'unreachable', reason: `the answer was cut off (${error.message})` }));
        response.on('close', () => {
          if (!response.complete) finish({ kind: 'unreachable', reason: 'the answer was cut off' });
        });
        response.on('end', () => finish(judgeAnswer(status, Buffer.concat(chunks).toString('utf8'))));
      };

      let request;
      try {
        request = (https ? httpsRequest : httpRequest)(target, {
          method: 'GET',
          agent: false,
          headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'user-agent': 'pipeline-orchestrator marketplace import' },
          ...(this.settings.lookup ? { lookup: this.settings.lookup } : {}),
        });
      } catch (error) {
        // A header value node refuses (a control character in the token): its message names the header, not the value.
        finish({ kind: 'unreachable', reason: `the request could not be sent: ${(error as Error).message}` });
        return;
      }
      const sent = request;
      destroy = () => sent.destroy();
      timers.push(setTimeout(() => finish({ kind: 'unreachable', reason: `no complete answer within ${seconds(this.settings.timeoutMs)}` }), this.settings.timeoutMs));
      sent.on('socket', (socket: Socket) => {
        if (!socket.connecting) return;
        connectTimer = setTimeout(() => finish({ kind: 'unreachable', reason: `could not connect to ${target.host} within ${seconds(this.settings.connectTimeoutMs)}` }), this.settings.connectTimeoutMs);
        socket.once(https ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
      });
      sent.on('response', onResponse);
      sent.on('error', (error) => finish({ kind: 'unreachable', reason: reasonOf(error) }));
      sent.end();
    });
  }
}

/** A network error in a sentence: node's message (`connect ECONNREFUSED 127.0.0.1:9`), or for an AggregateError (every address of a name tried) its first. */
const reasonOf = (error: Error & { code?: unknown; errors?: unknown }): string => {
  const first = Array.isArray(error.errors) ? (error.errors[0] as (Error & { code?: unknown }) | undefined) : undefined;
  const source = error.message === '' && first ? first : error;
  return source.message || (typeof source.code === 'string' ? source.code : 'connection failed');
};

/** The fetch result of a complete answer that is not a 401, 403, 404 or redirect. */
export const judgeAnswer = (status: number, text: string): MarketplaceFetch => {
  let parsed: unknown;
  let json = true;
  try {
    parsed = JSON.parse(text);
  } catch {
    json = false;
  }
  if (status < 200 || status >= 300) {
    const detail = json && parsed !== null && typeof parsed === 'object' && typeof (parsed as { detail?: unknown }).detail === 'string' ? (parsed as { detail: string }).detail : null;
    const quoted = detail === null ? '' : `: ${detail.length > DETAIL_CHARS ? `${detail.slice(0, DETAIL_CHARS)}…` : detail}`;
    return { kind: 'bad_answer', reason: `HTTP ${status}${quoted}` };
  }
  if (!json) return { kind: 'bad_answer', reason: `HTTP ${status}: the answer is not JSON` };
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { kind: 'bad_answer', reason: `HTTP ${status}: the answer is not a catalog item (a JSON object)` };
  if (exceedsDepth(parsed, JSON_MAX_DEPTH)) return { kind: 'bad_answer', reason: `HTTP ${status}: the answer nests deeper than ${JSON_MAX_DEPTH} levels` };
  return { kind: 'item', body: parsed as Record<string, unknown> };
};
