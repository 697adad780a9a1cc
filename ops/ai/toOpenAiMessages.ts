import type OpenAI from 'openai';
import type { AiMessage } from '../../shared/ports/AiModule.ts';

type MessageParam = OpenAI.Chat.ChatCompletionMessageParam;
type AssistantParam = OpenAI.Chat.ChatCompletionAssistantMessageParam;

/** A tool call of the provider's last reply in a session: its id and arguments, to answer it by. */
export interface RememberedToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * The port's messages as the chat completions API wants them. A tool result there must answer a
 * tool call of the assistant message just before it (`tool_call_id`), while the port's tool message
 * is only `{role: tool, name, content}` and its assistant turn carries no calls. So each run of tool
 * messages is tied to the assistant message before it (one is inserted when there is none): a
 * tool call per result, with the id and arguments the provider gave in the session's last reply when
 * a call of that name is remembered, else a made-up id and `{}`.
 */
export const toOpenAiMessages = (messages: ReadonlyArray<AiMessage>, remembered: ReadonlyArray<RememberedToolCall> = []): MessageParam[] => {
  const out: MessageParam[] = [];
  const unused = [...remembered];
  let caller: AssistantParam | null = null;
  let made = 0;
  for (const message of messages) {
    if (message.role !== 'tool') {
      caller = null;
      if (message.role === 'assistant') out.push({ role: 'assistant', content: message.content });
      else if (message.role === 'system') out.push({ role: 'system', content: message.content });
      else out.push({ role: 'user', content: message.content });
      continue;
    }
    if (caller === null) {
      const last = out.at(-1);
      if (last?.role === 'assistant') {
        caller = last;
      } else {
        caller = { role: 'assistant', content: null };
        out.push(caller);
      }
      caller.tool_calls = [...(caller.tool_calls ?? [])];
    }
    const name = message.name ?? 'tool';
    const index = unused.findIndex((call) => call.name === name);
    const known = index >= 0 ? unused.splice(index, 1)[0] : undefined;
    made += 1;
    const id = known?.id ?? `call_${made}`;
    caller.tool_calls = [...(caller.tool_calls ?? []), { id, type: 'function', function: { name, arguments: known?.arguments ?? '{}' } }];
    out.push({ role: 'tool', tool_call_id: id, content: message.content });
  }
  return out;
};
