import { recordExchange } from './trafficRecorder.ts';

/**
 * A small HTTP client for integration tests: keeps cookies like a browser would (by name, no
 * domain logic; the tests talk to one host) and never follows redirects, so tests can assert them.
 * With OPENAPI_TRAFFIC_DIR set, every answer is recorded for the OpenAPI conformance check
 * (test/support/trafficRecorder.ts).
 */
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
  cookies: Record<string, string>;
}

export class HttpClient {
  readonly jar = new Map<string, string>();

  /**
   * `record: false` keeps this client's answers out of the OpenAPI conformance check: for a server
   * the document does not describe (a process of a role that serves no API routes).
   */
  constructor(
    readonly baseUrl: string,
    private readonly options: { record?: boolean } = {},
  ) {}

  async request(
    method: string,
    path: string,
    options: { json?: unknown; form?: Record<string, string>; body?: string; headers?: Record<string, string>; token?: string } = {},
  ): Promise<Reply> {
    const headers: Record<string, string> = { ...options.headers };
    let body: string | undefined = options.body;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    }
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (this.jar.size > 0 && !headers.cookie) headers.cookie = [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const url = new URL(path, this.baseUrl);
    const response = await fetch(url, { method, headers, body, redirect: 'manual' });
    const cookies: Record<string, string> = {};
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const index = pair.indexOf('=');
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      cookies[name] = value;
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.jar.delete(name);
      else this.jar.set(name, value);
    }
    const text = await response.text();
    if (this.options.record !== false) recordExchange({ method, url, status: response.status, contentType: response.headers.get('content-type'), body: text });
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: tests read `text`.
    }
    return { status: response.status, headers: response.headers, text, json, cookies };
  }

  get(path: string, options?: Parameters<HttpClient['request']>[2]) {
    return this.request('GET', path, options);
  }

  post(path: string, options?: Parameters<HttpClient['request']>[2]) {
    return this.request('POST', path, options);
  }
}
