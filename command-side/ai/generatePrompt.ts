import type { AiMessage } from '../../shared/ports/AiModule.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import { CATALOG_TYPE, REQUIRED_FIELDS, type GeneratedField, type GenerateItemType } from './generationFields.ts';

/** The texts include_guide_doc and include_install_guide add (docs/writing-code.md, read at start). */
export interface GuideTexts {
  guide: string;
  installGuide: string;
}

export interface GenerationPromptInput {
  itemType: GenerateItemType;
  prompt: string;
  /** Earlier turns (the request's, or the session's); the user's prompt comes after them. */
  messages: ReadonlyArray<{ role: string; content: string }>;
  /** The previous output to refine, as the client sent it back (or the session kept it). */
  generatedContent: Record<string, unknown> | null;
  skillContent: string | null;
  includeGuide: boolean;
  includeInstallGuide: boolean;
  guides: GuideTexts;
}

const FIELD_FORMATS: Readonly<Record<GeneratedField, string>> = {
  codeblock: '"codeblock": {"language": "python" or "javascript", "content": "<the whole code>"}',
  bashblock:
    '"bashblock": {"language": "bash", "content": "<shell commands run before the code, in its working directory, to install what it imports; an empty string when nothing is needed>"}',
  payload: '"payload": {<a JSON object: the payload the code receives; string values may use {{variable}} templates>}',
  connection: '"connection": {<a JSON object: the connection content the code expects, with placeholder values, never real credentials>}',
};

const CONTRACTS: Readonly<Record<GenerateItemType, string>> = {
  operator: [
    'An operator is the code a task runs. Its codeblock must define these module-level functions, each called with (connection, payload, context):',
    '- initialize(connection, payload, context): prepares the run; called first.',
    '- run(connection, payload, context): starts or does the work.',
    '- check_completion(connection, payload, context): called right after run and then polled; returns an object whose "status" is "running" (poll again), "success" or "failed"; the last result becomes the task\'s last_run_output.',
    '- finish(connection, payload, context): always called at the end, whatever happened (clean-up).',
    'connection is the decrypted content of the task\'s connection item, payload the templated payload, context holds task_laui, task_name, session_id, logical_date, data_interval_start, data_interval_end and the merged config parameters.',
    'Functions may be async. In JavaScript use an ES module (export function ...) or CommonJS (module.exports = {...}). What the code prints is the run\'s log.',
  ].join('\n'),
  action: [
    'An action is code run on its own (POST /action/run) or as a hook of a task (create, pre, running, post actions). Its codeblock must define:',
    '- run(connection, action_variables, context): returns a JSON-serialisable value; as a create or pre action, returning exactly false stops the task.',
    'connection is the decrypted content of the action\'s connection item (or null), action_variables the templated variables of the action reference, context holds action_laui, action_name, session_id, user_laui and, for hooks, task_laui, task_name and action_type.',
    'run may be async. In JavaScript use an ES module (export function run) or CommonJS (module.exports = {run}). What the code prints is the run\'s log.',
  ].join('\n'),
  chat: [
    'A chat item\'s codeblock is its AI module. It must define run(connection, messages) and return the model\'s reply as a string, or an object {"content": str, "finish_reason": str or null, "tool_calls": []} where finish_reason "length" means the reply was cut by the token limit.',
    'connection holds the LLM credentials: api_key, model, token_limit (the reply\'s token budget) and optionally base_url (an OpenAI-compatible endpoint) and organization. messages is a list of {"role", "content"}: a system prompt first, then earlier messages, the user\'s prompt last.',
  ].join('\n'),
  agent: [
    'An agent is a chat item\'s AI module that may call tools. Its codeblock must define run(connection, messages, tools=None) (JavaScript: run(connection, messages, tools)) and return the reply as a string, or an object {"content": str, "finish_reason": str or null, "tool_calls": [{"name": str, "arguments": object or JSON string}]}; finish_reason "length" means the reply was cut by the token limit.',
    'connection holds the LLM credentials: api_key, model, token_limit and optionally base_url (an OpenAI-compatible endpoint) and organization. messages is a list of {"role", "content"} (system prompt first, the user\'s prompt last; tool results as {"role": "tool", "name", "content"}). tools, when given, lists {"name", "description", "input_schema"}.',
  ].join('\n'),
  payload: 'A payload is the JSON object a task hands its operator (after {{variable}} templating: ds, ds_nodash, ts, ts_nodash, current_date, current_timestamp, the config parameters and the task fields).',
};

/** The prompt schemas of spec 4.11: guides are part of the action and operator prompts only. */
const TAKES_GUIDES: ReadonlySet<GenerateItemType> = new Set(['action', 'operator']);

/**
 * The system prompt of a generation: skill_content first, then what to produce and in which form
 * (one JSON object whose keys are the item type's required fields), the catalog schema of the item
 * type, its contract, the guides asked for, and the previous output when refining.
 */
export const generationSystemPrompt = (input: GenerationPromptInput): string => {
  const fields = REQUIRED_FIELDS[input.itemType];
  const definition = resolveItemType(CATALOG_TYPE[input.itemType]);
  const parts: string[] = [];
  if (input.skillContent !== null && input.skillContent.trim() !== '') parts.push(input.skillContent.trim());
  parts.push(
    [
      `You write ${input.itemType === 'agent' ? 'an agent (the AI module of a chat item)' : `a ${input.itemType} item`} for a pipeline orchestration service.`,
      `Answer with exactly one JSON object, bare or in a \`\`\`json fence, whose keys are ${fields.map((field) => `"${field}"`).join(', ')}, plus an optional "message" (a short note to the user). Nothing else outside it. The fields:`,
      ...fields.map((field) => `- ${FIELD_FORMATS[field]}`),
    ].join('\n'),
  );
  parts.push(CONTRACTS[input.itemType]);
  if (definition) parts.push(`The catalog schema of a ${definition.type} item (JSON Schema):\n${JSON.stringify(definition.schema)}`);
  if (TAKES_GUIDES.has(input.itemType) && input.includeGuide && input.guides.guide.trim() !== '') parts.push(`Guide:\n${input.guides.guide.trim()}`);
  if (TAKES_GUIDES.has(input.itemType) && input.includeInstallGuide && input.guides.installGuide.trim() !== '') {
    parts.push(`Install guide (bashblock):\n${input.guides.installGuide.trim()}`);
  }
  if (input.generatedContent !== null) {
    parts.push(`The current version, to refine as the user asks (answer with the whole new version, same form):\n${JSON.stringify(input.generatedContent)}`);
  }
  return parts.join('\n\n');
};

/** Earlier roles as the port knows them: a client's `model`/`ai` turn is the assistant's, anything unknown the user's. */
const roleOf = (role: string): AiMessage['role'] => {
  const lowered = role.toLowerCase();
  if (lowered === 'assistant' || lowered === 'model' || lowered === 'ai') return 'assistant';
  if (lowered === 'system' || lowered === 'tool') return lowered;
  return 'user';
};

/** The module's messages: the system prompt first, then the earlier messages, the user's prompt last. */
export const generationMessages = (input: GenerationPromptInput): AiMessage[] => [
  { role: 'system', content: generationSystemPrompt(input) },
  ...input.messages.map((message) => ({ role: roleOf(message.role), content: message.content })),
  { role: 'user', content: input.prompt },
];
