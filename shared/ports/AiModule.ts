/**
 * The AI module of a `chat` item (spec 2.3, 4.11): user code (Python or JavaScript) defining
 * `run(connection, messages, tools=None)`, run in the same sandbox as actions with the chat's
 * connection decrypted; or, when the chat has no codeblock, the service's built-in module (the
 * `openai` client against `base_url`). Both are reached through this port, so /ai/generate and the
 * /ai/agent loop never know which one answered.
 */

export interface AiMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** The tool's name on a `tool` message (its result). */
  name?: string;
}

/** A tool the module may call: an MCP tool as listed by the server (name, description, JSON schema of its arguments). */
export interface AiTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export interface AiToolCall {
  name: string;
  /** As the module gave it: an object, or a JSON string (parsed by the caller; a bad one is the tool's failure). */
  arguments: unknown;
}

/** Tokens one call used, as the provider counted them (OpenAI's `usage`). */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface AiReply {
  content: string;
  /** `length`: cut by the token limit (206 on /ai/generate). Null when the module returned a bare string. */
  finish_reason: string | null;
  tool_calls: AiToolCall[];
  /** What the call cost, when the module knows (the built-in module always does; a chat's own module may return it). */
  usage?: TokenUsage | null;
}

export interface AiInvocation {
  /** The chat item's codeblock (`{language, content}`), null or empty for the built-in module. */
  codeblock: { language: string; content: string } | null;
  /** The chat's connection, decrypted: api_key, model, token_limit, base_url?, organization?. */
  connection: Readonly<Record<string, unknown>>;
  messages: AiMessage[];
  /** Given only when tools are enabled (the agent with enable_tools). */
  tools?: AiTool[];
  /** The calling session, for the run's log session and a cached temporary module (temp_file_path). */
  sessionId: string;
  signal?: AbortSignal;
}

/**
 * Calls the module once. Throws AiModuleError for a provider or module failure: `token_limit` when
 * the provider refused for a token or context limit (206 on /ai/generate), else `provider` (500
 * `Internal server error: <provider error>`).
 */
export interface AiModule {
  invoke(invocation: AiInvocation): Promise<AiReply>;
}

export class AiModuleError extends Error {
  constructor(
    readonly kind: 'provider' | 'token_limit' | 'module',
    message: string,
  ) {
    super(message);
    this.name = 'AiModuleError';
  }
}
