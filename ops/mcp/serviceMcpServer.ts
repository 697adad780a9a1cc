// The low-level Server (not McpServer): the tools are described by JSON Schema, as the spec's
// routes are, and McpServer.registerTool takes Zod schemas only.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../../shared/errors.ts';
import { validateRequest } from '../../shared/validation/validateRequest.ts';
import { SERVICE_TOOLS, serviceToolNamed } from './mcpTools.ts';
import type { ApiAnswer, ApiRequest } from './serviceApi.ts';

export const MCP_SERVER_NAME = 'pipeline-orchestrator';
export const MCP_SERVER_VERSION = '0.1.0';

type McpServerSdk = typeof import('@modelcontextprotocol/sdk/server/index.js') & typeof import('@modelcontextprotocol/sdk/types.js');
let sdk: McpServerSdk | undefined;
/** The SDK's server half, imported at the first MCP request: it takes most of a second to load, which a start without MCP traffic need not pay. */
const mcpServerSdk = async (): Promise<McpServerSdk> => (sdk ??= { ...(await import('@modelcontextprotocol/sdk/server/index.js')), ...(await import('@modelcontextprotocol/sdk/types.js')) });

const INSTRUCTIONS =
  'Tools over the pipeline orchestration service: the catalog (get, search, create, update), tasks (run, update state, diagnose), ' +
  'run logs (session content, SQL over log files) and read-only SQL against connection items. Every tool acts with the permissions of ' +
  'the token this connection authenticated with; a refused call is a tool error carrying the route status and detail.';

/** An MCP tool error: the model (or the person) reads what went wrong; the server carries on. */
const toolError = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

/** A route's `{detail}` as one line: the string itself, anything else as JSON. */
const detailText = (body: unknown): string => {
  const detail = body !== null && typeof body === 'object' && 'detail' in body ? (body as { detail: unknown }).detail : body;
  return typeof detail === 'string' ? detail : JSON.stringify(detail);
};

/**
 * One tool call: its arguments checked against its JSON Schema, then its route called with the
 * caller's identity (`call`). Every failure (unknown tool, bad arguments, a 4xx/5xx from the
 * route, the service unreachable) is a tool result with isError, never a protocol error or a throw:
 * an agent loop reads it and carries on.
 */
export const callServiceTool = async (name: string, args: unknown, call: (request: ApiRequest) => Promise<ApiAnswer>): Promise<CallToolResult> => {
  const tool = serviceToolNamed(name);
  if (!tool) return toolError(`Error: unknown tool ${JSON.stringify(name)}; the tools are ${SERVICE_TOOLS.map((known) => known.name).join(', ')}`);
  if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) return toolError('Error: the arguments must be a JSON object');
  let valid: Record<string, unknown>;
  try {
    valid = validateRequest<Record<string, unknown>>(tool.inputSchema, { ...(args as Record<string, unknown> | undefined) }, 'body');
  } catch (error) {
    if (error instanceof AppError) return toolError(`Error: invalid arguments for ${name}: ${detailText({ detail: error.detail })}`);
    throw error;
  }
  let answer: ApiAnswer;
  try {
    answer = await call(tool.request(valid));
  } catch (error) {
    return toolError(`Error: the service could not be reached: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (answer.status < 200 || answer.status >= 300) return toolError(`Error ${answer.status}: ${detailText(answer.body)}`);
  const failed = tool.failure?.(answer.body) ?? null;
  if (failed !== null) return toolError(`Error: ${failed}`);
  return { content: [{ type: 'text', text: typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body) }] };
};

/**
 * The service's MCP server for one request of one caller: the tools list (static) and tool calls
 * that reach the REST routes through `call`, which carries that caller's access token.
 */
export const serviceMcpServer = async (call: (request: ApiRequest) => Promise<ApiAnswer>): Promise<Server> => {
  const { Server, CallToolRequestSchema, ListToolsRequestSchema } = await mcpServerSdk();
  const server = new Server({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: SERVICE_TOOLS.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => callServiceTool(request.params.name, request.params.arguments, call));
  return server;
};
