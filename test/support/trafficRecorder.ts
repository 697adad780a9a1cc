import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The opt-in recorder of the service's answers the tests get (issue 35: the contract is complete).
 * With OPENAPI_TRAFFIC_DIR set, each answer a test client reads (HttpClient, rawRequest,
 * SseClient, recordedFetch) is appended as one JSON line to a file of this process in that folder;
 * test/contracts/openApiTraffic.ts then holds every line against the OpenAPI document. Unset,
 * nothing is written. The root hook (test/support/openApiTrafficHook.ts) sets it for `npm test`.
 */

/** One answer as the client got it. */
export interface RecordedExchange {
  method: string;
  /** Path and query as sent (not normalised: a fuzzed path stays as it was). */
  path: string;
  status: number;
  /** The Content-Type header, '' when absent. */
  contentType: string;
  /** The body's length in characters (0: no body). */
  bodyLength: number;
  /** The parsed body when it is JSON; absent otherwise, or when it was too long to record. */
  json?: unknown;
  /** The body was JSON but longer than MAX_RECORDED_BODY: its shape was not recorded. */
  truncated?: boolean;
  /** The body was not read as text: a stream (SSE) of which only the head was read, or a compressed body. */
  unread?: boolean;
  /** The spec file and test that sent it, when the root hook told (see recordingTest). */
  test?: string;
}

/**
 * Longer JSON bodies are counted, not kept: a run's traffic stays a few MB. The one body past it in
 * the suite is the OpenAPI document itself (GET /api/v1/openapi.json, documented as any object).
 */
export const MAX_RECORDED_BODY = 100_000;

let currentTest: string | undefined;

/** Named on each recorded exchange until the next call (the root hook's beforeEach). */
export const recordingTest = (title: string | undefined): void => {
  currentTest = title;
};

export const trafficDir = (): string | undefined => process.env.OPENAPI_TRAFFIC_DIR || undefined;

const isJsonType = (contentType: string): boolean => /^application\/(?:[\w.+-]*\+)?json\b/i.test(contentType.trim());

/**
 * The part of a URL the document's paths are matched against: path and query, as sent. A request
 * target that is no absolute URL (`/a/../b`, `*`, what a fuzzer writes) is kept as it is.
 */
const pathOf = (url: string | URL): string => {
  if (typeof url === 'string' && !/^https?:\/\//i.test(url)) return url;
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return `${parsed.pathname}${parsed.search}`;
};

/**
 * Appends one answer when recording is on. `body`: the text read; null when it was not read as
 * text (a stream, a compressed body). `url`: a full URL, or the request target as written on the
 * wire (rawRequest).
 */
export const recordExchange = (answer: { method: string; url: string | URL; status: number; contentType: string | null; body: string | null }): void => {
  const dir = trafficDir();
  if (dir === undefined) return;
  const contentType = answer.contentType ?? '';
  const exchange: RecordedExchange = {
    method: answer.method.toUpperCase(),
    path: pathOf(answer.url),
    status: answer.status,
    contentType,
    bodyLength: answer.body?.length ?? 0,
  };
  if (answer.body === null) exchange.unread = true;
  else if (answer.body !== '' && isJsonType(contentType)) {
    if (answer.body.length > MAX_RECORDED_BODY) exchange.truncated = true;
    else {
      try {
        exchange.json = JSON.parse(answer.body);
      } catch {
        // Declared JSON but is not: recorded without `json`, which the check reports.
      }
    }
  }
  if (currentTest !== undefined) exchange.test = currentTest;
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, `traffic-${process.pid}.jsonl`), `${JSON.stringify(exchange)}\n`);
};

/**
 * fetch that records the answer (for specs that talk to the service through fetch itself). The
 * body is read from a clone, so the caller reads its response as usual; a streamed answer
 * (text/event-stream) is recorded by its head only.
 */
export const recordedFetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
  const response = await fetch(input, init);
  if (trafficDir() === undefined) return response;
  const contentType = response.headers.get('content-type');
  const method = init?.method ?? 'GET';
  if (/^text\/event-stream/i.test(contentType ?? '')) {
    recordExchange({ method, url: input, status: response.status, contentType, body: null });
    return response;
  }
  const body = await response.clone().text();
  recordExchange({ method, url: input, status: response.status, contentType, body });
  return response;
};
