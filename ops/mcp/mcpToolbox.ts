import type { AiTool } from '../../shared/ports/AiModule.ts';
import type { AgentToolSession, OpenAgentTools, ToolOutcome } from '../../shared/ports/AgentTools.ts';
import { MCP_PATH } from './mcpRoutes.ts';
import { MCP_SERVER_VERSION } from './serviceMcpServer.ts';

export interface McpToolboxSettings {
  /** The service's own base URL (loopback), read at each agent call: known once the service listens. */
  ownUrl(): string;
  /** MCP_SERVER_URL: another MCP server for the agent's tools; null uses the service's own /mcp. */
  serverUrl: string | null;
  /** MCP_SERVER_TOKEN: the Bearer token sent to MCP_SERVER_URL; null sends none. */
  serverToken: string | null;
  /** How long one tool call may take (the longest route, POST /query/execute, may take 2 minutes). */
  toolTimeoutMs: number;
}

type McpClientSdk = typeof import('@modelcontextprotocol/sdk/client/index.js') & typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js');
let clientSdk: McpClientSdk | undefined;
/** The SDK's client half, imported at the first agent call: it is slow to load, and most starts make no agent call. */
const loadClientSdk = async (): Promise<McpClientSdk> =>
  (clientSdk ??= { ...(await import('@modelcontextprotocol/sdk/client/index.js')), ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')) });

/** At most this many tools/list pages are read from a server (a misbehaving server's endless cursor). */
const MAX_TOOL_PAGES = 20;

/** The text of a tool result: its text parts, other parts (images, resources) named by their type. */
const textOf = (content: ReadonlyArray<{ type: string; text?: unknown }>): string =>
  content.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : `[${part.type} content]`)).join('\n');

/**
 * The agent's tools through an MCP client (the SDK's Client over Streamable HTTP), one connection
 * per agent call, closed when the call ends.
 *
 * Whose identity: by default the service's own /mcp with the access token the agent's caller
 * presented, so each tool call is checked exactly as the caller's own REST call would be; an
 * anonymous caller gets no tools (every tool of the own server needs a user). With MCP_SERVER_URL
 * the tools come from that server with MCP_SERVER_TOKEN (or no Authorization): the caller's token
 * is a credential of this service and is never sent to another server.
 */
export const mcpToolbox =
  (settings: McpToolboxSettings): OpenAgentTools =>
  async (caller) => {
    const external = settings.serverUrl !== null;
    const token = external ? settings.serverToken : caller.accessToken;
    if (!external && token === null) return null;
    const url = new URL(settings.serverUrl ?? `${settings.ownUrl()}${MCP_PATH}`);
    const { Client, StreamableHTTPClientTransport } = await loadClientSdk();
    const client = new Client({ name: 'pipeline-orchestrator-agent', version: MCP_SERVER_VERSION });
    const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: token === null ? {} : { authorization: `Bearer ${token}` } } });
    try {
      await client.connect(transport);
      const tools: AiTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_TOOL_PAGES; page += 1) {
        const listed = await client.listTools(cursor === undefined ? undefined : { cursor });
        for (const tool of listed.tools) tools.push({ name: tool.name, description: tool.description ?? '', input_schema: tool.inputSchema });
        cursor = listed.nextCursor;
        if (cursor === undefined) break;
      }
      const session: AgentToolSession = {
        tools,
        async call(name, args): Promise<ToolOutcome> {
          const result = await client.callTool({ name, arguments: args }, undefined, { timeout: settings.toolTimeoutMs });
          const content = Array.isArray(result.content) ? (result.content as Array<{ type: string; text?: unknown }>) : [];
          return { text: textOf(content), isError: result.isError === true };
        },
        close: () => client.close(),
      };
      return session;
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
  };
