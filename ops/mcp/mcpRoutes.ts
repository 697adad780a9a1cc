import Router from '@koa/router';
import { unauthorized } from '../../shared/errors.ts';
import type { AppContext, AppState } from '../../shared/http/AppState.ts';
import type { ServiceApi } from './serviceApi.ts';
import { serviceMcpServer } from './serviceMcpServer.ts';

export const MCP_PATH = '/mcp';

let transportSdk: typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js') | undefined;
/** The SDK's server transport, imported at the first MCP request rather than at every start (the SDK is slow to load). */
const loadTransportSdk = async () => (transportSdk ??= await import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'));

const jsonRpcError = (code: number, message: string) => ({ jsonrpc: '2.0', error: { code, message }, id: null });

const bearerToken = (header: string): string | null => /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? null;

/** The request's headers as the web-standard transport reads them (Accept, Content-Type, MCP-Protocol-Version). */
const requestHeaders = (ctx: AppContext): Headers => {
  const headers = new Headers();
  for (const [name, value] of Object.entries(ctx.headers)) {
    // The body was read by the app's parser and is handed over parsed: no length to announce.
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding') continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
};

/**
 * The service as an MCP server (Streamable HTTP) at /mcp, mounted behind the authentication wall:
 * a Bearer access token (the one GET /api/v1/get-mcp-token hands out, or any access token).
 *
 * Stateless (no Mcp-Session-Id): each POST gets its own Server and transport, built for the
 * caller whose token it carries and closed when it is answered. Nothing outlives a request, so
 * there is no session table to bound or expire, a revoked token stops working at the next request,
 * and any node of a deployment can answer any request. Replies are JSON (enableJsonResponse): the
 * tools answer once, nothing streams. GET (a server-to-client SSE stream) and DELETE (ending a
 * session) have nothing to serve: 405, which MCP clients take as "no stream offered".
 */
export const mcpRoutes = (deps: { api: ServiceApi }): Router<AppState> => {
  const router = new Router<AppState>();

  router.post(MCP_PATH, async (ctx) => {
    if (ctx.state.bodyError !== undefined) {
      ctx.status = 400;
      ctx.body = jsonRpcError(-32700, `Parse error: ${ctx.state.bodyError}`);
      return;
    }
    const token = bearerToken(ctx.get('authorization'));
    // The wall authenticated this very header; without it the request would not be here.
    if (token === null) throw unauthorized();
    const server = await serviceMcpServer((request) => deps.api(request, token));
    const { WebStandardStreamableHTTPServerTransport } = await loadTransportSdk();
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    try {
      await server.connect(transport);
      const request = new Request(new URL(ctx.originalUrl, 'http://mcp.local'), { method: 'POST', headers: requestHeaders(ctx) });
      const response = await transport.handleRequest(request, { parsedBody: ctx.request.body });
      ctx.status = response.status;
      response.headers.forEach((value, name) => ctx.set(name, value));
      // A notification's 202 has no body; Koa keeps the explicit status for an empty string.
      ctx.body = await response.text();
    } finally {
      await server.close();
    }
  });

  const noStream = (ctx: AppContext) => {
    ctx.status = 405;
    ctx.set('Allow', 'POST');
    ctx.body = jsonRpcError(-32000, 'Method not allowed: this MCP server is stateless (POST only)');
  };
  router.get(MCP_PATH, noStream);
  router.delete(MCP_PATH, noStream);

  return router;
};
