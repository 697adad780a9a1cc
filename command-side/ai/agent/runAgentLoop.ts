import type { AiInvocation, AiMessage, AiModule, AiToolCall } from '../../../shared/ports/AiModule.ts';
import type { AgentToolSession } from '../../../shared/ports/AgentTools.ts';

/** Spec 8: the agent's tool loop runs up to 50 iterations (module calls). */
export const AGENT_MAX_ITERATIONS = 50;

/** A tool result longer than this reaches the module truncated: one catalog page must not fill the model's context. */
export const MAX_TOOL_RESULT_CHARS = 50_000;

export const stoppedAtBoundNote = (iterations: number): string =>
  `[The agent stopped after ${iterations} iterations: the model was still calling tools. Ask again with a narrower request.]`;

export interface AgentLoopInput {
  module: AiModule;
  codeblock: AiInvocation['codeblock'];
  connection: AiInvocation['connection'];
  sessionId: string;
  /** System prompt, earlier messages, the user's prompt (agentMessages). */
  messages: ReadonlyArray<AiMessage>;
  /** The tools when enable_tools and a tool session opened; null: the module gets no tools. */
  tools: AgentToolSession | null;
  maxIterations?: number;
  signal?: AbortSignal;
}

export interface AgentLoopResult {
  /** The last reply's content (with the bound's note when the loop stopped there). */
  reply: string;
  /** Names of the tools called, in order (failed calls too). */
  toolCallsMade: string[];
  /** Module calls made. */
  iterations: number;
  stoppedAtBound: boolean;
  /** Every message of the conversation as the module last saw it, plus the final reply. */
  transcript: AiMessage[];
}

const truncated = (text: string): string =>
  text.length <= MAX_TOOL_RESULT_CHARS ? text : `${text.slice(0, MAX_TOOL_RESULT_CHARS)}\n[truncated: ${text.length - MAX_TOOL_RESULT_CHARS} more characters]`;

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * The assistant's turn that asked for tools, as the next module call reads it: what it said, then
 * each call with its arguments. The port's messages are plain {role, content} (plus `name` on tool
 * results), so the call is written out rather than carried as a structured tool_calls field.
 */
const assistantTurn = (content: string, calls: ReadonlyArray<AiToolCall>): string => {
  const listed = calls.map((call) => `${call.name}(${typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {})})`);
  return [content.trim(), `[tool calls] ${listed.join('; ')}`].filter((part) => part !== '').join('\n');
};

/**
 * One tool call, whatever happens, as the content of its tool message: arguments that are not a
 * JSON object (or not JSON at all), a tool the server does not have, a refused or failing call and
 * a transport failure all become text starting with "Error" that the module reads on its next
 * turn; nothing here throws.
 */
export const runToolCall = async (tools: AgentToolSession, call: AiToolCall): Promise<string> => {
  let args: unknown = call.arguments ?? {};
  if (typeof args === 'string') {
    try {
      args = args.trim() === '' ? {} : JSON.parse(args);
    } catch (error) {
      return `Error: the arguments of ${call.name} are not valid JSON (${errorText(error)}): ${truncated(call.arguments as string)}`;
    }
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return `Error: the arguments of ${call.name} must be a JSON object`;
  try {
    const outcome = await tools.call(call.name, args as Record<string, unknown>);
    const text = outcome.text === '' ? (outcome.isError ? 'Error' : '(no content)') : outcome.text;
    return truncated(outcome.isError && !/^error\b/i.test(text) ? `Error: ${text}` : text);
  } catch (error) {
    return `Error: the call of ${call.name} failed: ${errorText(error)}`;
  }
};

/**
 * The agent loop (spec 4.11, 8): call the module; when it asks for tools (and has them), run each
 * call through the tool session, append the assistant's turn and one `{role: 'tool', name,
 * content}` message per call, and call the module again; its first reply without tool calls is the
 * answer. A tool's failure is that tool message's content, never the loop's end.
 *
 * The bound: at most `maxIterations` module calls. A reply at the bound that still asks for tools
 * ends the loop without running them (nothing would read their results): the answer is that
 * reply's content followed by a note saying so (stoppedAtBound). Module failures (AiModuleError)
 * propagate: the route makes them 500s.
 */
export const runAgentLoop = async (input: AgentLoopInput): Promise<AgentLoopResult> => {
  const max = input.maxIterations ?? AGENT_MAX_ITERATIONS;
  const messages = [...input.messages];
  const toolCallsMade: string[] = [];
  const tools = input.tools;
  for (let iteration = 1; ; iteration += 1) {
    input.signal?.throwIfAborted();
    const reply = await input.module.invoke({
      codeblock: input.codeblock,
      connection: input.connection,
      messages: [...messages],
      ...(tools === null ? {} : { tools: [...tools.tools] }),
      sessionId: input.sessionId,
      ...(input.signal === undefined ? {} : { signal: input.signal }),
    });
    const content = typeof reply.content === 'string' ? reply.content : '';
    // Tool calls of a module that was given no tools are not acted on: its content is the answer.
    const calls = reply.tool_calls ?? [];
    if (tools === null || calls.length === 0 || iteration >= max) {
      const stoppedAtBound = tools !== null && calls.length > 0;
      const final = stoppedAtBound ? [content.trim(), stoppedAtBoundNote(iteration)].filter((part) => part !== '').join('\n\n') : content;
      return { reply: final, toolCallsMade, iterations: iteration, stoppedAtBound, transcript: [...messages, { role: 'assistant', content: final }] };
    }
    messages.push({ role: 'assistant', content: assistantTurn(content, calls) });
    for (const call of calls) {
      const name = typeof call.name === 'string' ? call.name : String(call.name);
      toolCallsMade.push(name);
      messages.push({ role: 'tool', name, content: await runToolCall(tools, { ...call, name }) });
    }
  }
};
