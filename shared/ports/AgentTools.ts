import type { AiTool } from './AiModule.ts';

/** What one tool call came to: its text (the result, or what went wrong) and whether it failed. */
export interface ToolOutcome {
  text: string;
  isError: boolean;
}

/**
 * The tools of one agent call (POST /ai/agent with enable_tools): listed once from an MCP server,
 * then called by name. The adapter (ops/mcp/mcpToolbox.ts) speaks MCP; the loop never does.
 */
export interface AgentToolSession {
  readonly tools: ReadonlyArray<AiTool>;
  /** Runs one tool. Throws only for a transport failure; a refused call is an outcome with isError. */
  call(name: string, args: Record<string, unknown>): Promise<ToolOutcome>;
  close(): Promise<void>;
}

/** Who the agent acts for: the access token the caller presented, null for an anonymous caller. */
export interface AgentCaller {
  accessToken: string | null;
}

/** Opens the tool session of one agent call; null when no tools are available to this caller. */
export type OpenAgentTools = (caller: AgentCaller) => Promise<AgentToolSession | null>;
