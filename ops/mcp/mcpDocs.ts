import { json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { MCP_PATH } from './mcpRoutes.ts';
import { SERVICE_TOOLS } from './mcpTools.ts';

const jsonRpcError = objectOf({ jsonrpc: { type: 'string', const: '2.0' }, error: objectOf({ code: { type: 'integer' }, message: { type: 'string' } }), id: { type: 'null' } });
const notServed = { 405: json('Stateless server: POST only', jsonRpcError, { Allow: 'POST' }) };

/** A tool's description up to the route it calls: `Run a task (POST /api/v1/task/run)`. */
const toolSummary = (description: string): string => /^.*?\((?:GET|POST|PUT|PATCH|DELETE) [^)]*\)/.exec(description)?.[0] ?? description;

/** The OpenAPI docs of mcpRoutes. */
export const mcpDocs: RouteDocs = {
  tag: 'MCP',
  description: "The service as a Model Context Protocol server (Streamable HTTP, stateless): its tools act as the token's user.",
  auth: 'bearer',
  routes: [
    {
      method: 'POST',
      path: MCP_PATH,
      summary: 'One JSON-RPC message of the MCP protocol',
      description: [
        'Send `Accept: application/json, text/event-stream`. Replies are JSON; a notification gets 202 without a body.',
        '',
        // From the tools the server lists (tools/list gives each one's input schema as well).
        "The tools (`tools/list`, `tools/call`), each over one route of this API with the token's user:",
        '',
        ...SERVICE_TOOLS.map((tool) => `- \`${tool.name}\`: ${toolSummary(tool.description)}`),
      ].join('\n'),
      body: { schema: { type: 'object', description: 'A JSON-RPC 2.0 request or notification' } },
      responses: {
        200: json('The JSON-RPC response', { type: 'object' }),
        202: { description: 'A notification, accepted (no body)' },
        400: json('Parse error, or a request the protocol refuses', jsonRpcError),
        406: json('Not Acceptable: Accept must name both application/json and text/event-stream', jsonRpcError),
        413: null,
        422: null,
      },
    },
    { method: 'GET', path: MCP_PATH, summary: 'No server-to-client stream (405)', responses: notServed },
    { method: 'DELETE', path: MCP_PATH, summary: 'No session to end (405)', responses: notServed },
  ],
};
