import { AiModuleError, type AiReply, type AiToolCall } from '../../shared/ports/AiModule.ts';
import { tokenUsageOf } from './tokenUsage.ts';

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

const CONTRACT = 'the AI module must return a string or an object {content, finish_reason, tool_calls}';

/** One tool call as a module gave it: `{name, arguments}`, or OpenAI's `{function: {name, arguments}}`. */
const toolCallOf = (value: unknown, index: number): AiToolCall => {
  const call = isRecord(value) && isRecord(value.function) ? value.function : value;
  if (!isRecord(call) || typeof call.name !== 'string' || call.name === '') {
    throw new AiModuleError('module', `${CONTRACT}: tool_calls[${index}] has no name`);
  }
  // Arguments stay as given (an object or a JSON string): the caller parses them, and a bad one is the tool's failure.
  return { name: call.name, arguments: call.arguments ?? {} };
};

/**
 * What a user AI module's `run` returned, as the port's reply: a string is the reply itself; an
 * object gives content (null: empty), finish_reason (`length`: cut at the token limit),
 * tool_calls and, optionally, usage (OpenAI's token counts, recorded with the call). Anything else
 * is the module's failure.
 */
export const aiReplyOf = (value: unknown): AiReply => {
  if (typeof value === 'string') return { content: value, finish_reason: null, tool_calls: [] };
  if (!isRecord(value)) throw new AiModuleError('module', `${CONTRACT}, not ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value}`);
  const { content, finish_reason: finishReason, tool_calls: toolCalls } = value;
  if (content !== undefined && content !== null && typeof content !== 'string') throw new AiModuleError('module', `${CONTRACT}: content must be a string`);
  if (finishReason !== undefined && finishReason !== null && typeof finishReason !== 'string') throw new AiModuleError('module', `${CONTRACT}: finish_reason must be a string or null`);
  if (toolCalls !== undefined && toolCalls !== null && !Array.isArray(toolCalls)) throw new AiModuleError('module', `${CONTRACT}: tool_calls must be a list`);
  const usage = tokenUsageOf(value.usage);
  return {
    content: content ?? '',
    finish_reason: finishReason ?? null,
    tool_calls: (toolCalls ?? []).map(toolCallOf),
    ...(usage === null ? {} : { usage }),
  };
};
