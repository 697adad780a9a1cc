import type { AiMessage } from '../../../shared/ports/AiModule.ts';

const BASE_PROMPT =
  'You are the assistant of a pipeline orchestration service. Its catalog holds folders, operators, actions, connections, payloads, ' +
  'configs, tasks, tables, HTML reports, AI chats and skills, linked parent to child; tasks bind an operator, a connection and a payload ' +
  'and run ad hoc or on a cron schedule; every run writes a log session. Answer the user\'s request.';

const TOOLS_PROMPT =
  'You can call the tools you are given: they act on the service with the permissions of the user you are talking to. Each result comes ' +
  'back to you as a message with role "tool" (an error starts with "Error"); call tools only when needed, then give your answer.';

const MARKER_PROMPT =
  'End your final answer with a marker saying how to show it: [content_type:text], [content_type:markdown] or [content_type:html].';

/**
 * The agent's messages (spec 4.11): the system prompt (skill_content first, then the service's
 * own text), the earlier messages of the conversation, then the user's prompt.
 */
export const agentMessages = (input: { prompt: string; messages: ReadonlyArray<AiMessage>; skillContent: string | null; withTools: boolean }): AiMessage[] => {
  const system = [input.skillContent, BASE_PROMPT, input.withTools ? TOOLS_PROMPT : null, MARKER_PROMPT]
    .filter((part): part is string => part !== null && part.trim() !== '')
    .join('\n\n');
  return [{ role: 'system', content: system }, ...input.messages, { role: 'user', content: input.prompt }];
};
