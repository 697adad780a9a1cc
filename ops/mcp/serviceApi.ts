/** One request to the service's own REST API, as an MCP tool maps its arguments. */
export interface ApiRequest {
  method: 'GET' | 'POST';
  /** Absolute path under the service (`/api/v1/...`), path parameters already encoded. */
  path: string;
  /** Query parameters; undefined values are left out, others sent as strings. */
  query?: Record<string, unknown>;
  body?: unknown;
}

/** The route's answer: its status and its JSON body (the text when it was not JSON). */
export interface ApiAnswer {
  status: number;
  body: unknown;
}

export type ServiceApi = (request: ApiRequest, accessToken: string, signal?: AbortSignal) => Promise<ApiAnswer>;

/**
 * The MCP tools call the service's REST routes over HTTP on the loopback address, with the caller's
 * own access token: the route authenticates, validates and checks access exactly as it does for any
 * client (the same 401/403/404/422 and details), and a route added or changed later is picked up by
 * its tool with no second code path to keep in step. `baseUrl` is read at each call: the service
 * knows its port only once it listens.
 */
export const loopbackServiceApi =
  (baseUrl: () => string): ServiceApi =>
  async (request, accessToken, signal) => {
    const url = new URL(request.path, baseUrl());
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, typeof value === 'string' ? value : JSON.stringify(value));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${accessToken}`, accept: 'application/json' };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(url, {
      method: request.method,
      headers,
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      redirect: 'manual',
      signal,
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      // Not JSON (an SSE route would be): the text is the answer.
    }
    return { status: response.status, body };
  };

/**
 * The address the service reaches itself at: its listening address, with the wildcard addresses
 * (0.0.0.0, ::) replaced by the loopback one so that the request never leaves the host.
 */
export const loopbackUrl = (host: string, port: number): string => {
  if (host === '0.0.0.0' || host === '') return `http://127.0.0.1:${port}`;
  if (host === '::' || host === '[::]') return `http://[::1]:${port}`;
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
};
