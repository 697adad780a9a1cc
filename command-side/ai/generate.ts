import type { Clock } from '../../shared/clock.ts';
import type { EventMetadata } from '../../shared/events.ts';
import { newSessionId } from '../../shared/ids.ts';
import { AiModuleError, type AiModule, type AiReply } from '../../shared/ports/AiModule.ts';
import type { RunLimits, SyntaxChecker } from '../../shared/ports/CodeRunner.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { generationMessages, type GuideTexts } from './generatePrompt.ts';
import { parseGenerateRequest, type GenerateRequest } from './generateRequest.ts';
import { REQUIRED_FIELDS, REQUIRED_FUNCTIONS, type GeneratedContent } from './generationFields.ts';
import { sessionKey, type GenerationSessions } from './generationSessions.ts';
import { loadChat, type LoadChatDeps, type LoadedChat } from './loadChat.ts';
import { logAiCall, meteredModule, providerFailure, type MeteredModule } from './aiCallLog.ts';
import { summarised } from '../../shared/validation/boundedDetail.ts';
import { generatedField, parseGeneration } from './parseGeneration.ts';
import { recordChatHistory, type ChatHistoryDeps } from './recordChatHistory.ts';
import { validateGeneratedCode, type ValidationResult } from './validateGeneratedCode.ts';

export interface GenerateDeps extends LoadChatDeps, ChatHistoryDeps {
  clock: Clock;
  aiModule: AiModule;
  syntaxChecker: SyntaxChecker;
  /** Time, memory and output of one syntax check. */
  syntaxLimits: RunLimits;
  guides: GuideTexts;
  sessions: GenerationSessions;
}

/** AIResponse (spec 2.10). */
export interface AIResponse {
  message: string;
  generated_content: Record<string, GeneratedContent>;
  token_limit_exceeded: boolean;
  partial_generation: boolean;
  temp_file_path: string | null;
  validation: ValidationResult | null;
}

export interface GenerateOutcome {
  /** 206: the reply was cut at (or refused for) the token or context limit. */
  status: 200 | 206;
  sessionId: string;
  body: AIResponse;
}

/** Conversations kept per session are bounded: the oldest turns go first. */
const MAX_SESSION_MESSAGES = 100;

/**
 * POST /ai/generate (spec 4.11): loads the chat (loadChat: 500s, 403), builds the messages (system
 * prompt with the item type's schema and contract, earlier messages, the prompt), calls the chat's
 * AI module once, and reads the reply's JSON object into one GeneratedContent per required field.
 * - Cut (finish_reason `length`) or refused for a token/context limit (AiModuleError `token_limit`):
 *   206, token_limit_exceeded and partial_generation true, temp_file_path and validation null,
 *   the fields written to their end kept, the others completed false with empty content.
 * - Otherwise 200; operators and actions get their codeblock validated (validateGeneratedCode), and a
 *   complete codeblock is kept as the session's temporary module (temp_file_path).
 * - Any other module failure: 500 `Internal server error: <the provider's or module's message>`,
 *   summarised (providerFailure: one line, at most 200 characters).
 * Every call that reaches the module is logged with its tokens (logAiCall); a known caller's is also
 * recorded as a chat_history item (recordChatHistory).
 */
export const generate = async (
  deps: GenerateDeps,
  caller: Principal | null,
  body: Record<string, unknown>,
  metadata: EventMetadata,
  signal?: AbortSignal,
): Promise<GenerateOutcome> => {
  const request = parseGenerateRequest(body);
  const loaded = await loadChat(deps, caller, request);
  const sessionId = request.session_id ?? newSessionId(deps.clock.now());
  const metered = meteredModule(deps.aiModule);
  const call = { route: 'generate', caller, chatLaui: loaded.chat.laui, connectionLaui: loaded.connectionLaui, sessionId, correlationId: metadata.correlation_id, metered } as const;
  try {
    const outcome = await generateWith({ ...deps, aiModule: metered.module }, caller, request, loaded, sessionId, metadata, metered, signal);
    logAiCall(deps.logger, { ...call, outcome: { status: outcome.status } });
    return outcome;
  } catch (error) {
    logAiCall(deps.logger, { ...call, outcome: { error } });
    throw error;
  }
};

/** generate's steps once the chat is loaded: every module call goes through `deps.aiModule` (metered). */
const generateWith = async (
  deps: GenerateDeps,
  caller: Principal | null,
  request: GenerateRequest,
  loaded: LoadedChat,
  sessionId: string,
  metadata: EventMetadata,
  metered: MeteredModule,
  signal?: AbortSignal,
): Promise<GenerateOutcome> => {
  const key = sessionKey(caller?.laui ?? null, loaded.chat.laui, sessionId);
  // Only a known caller continues a session (generationSessions.ts, sessionKey).
  const session = request.session_id === null || caller === null ? undefined : deps.sessions.get(key);
  const earlier = request.messages ?? session?.messages ?? [];
  const messages = generationMessages({
    itemType: request.item_type,
    prompt: request.prompt,
    messages: earlier,
    generatedContent: request.generated_content ?? session?.generatedContent ?? null,
    skillContent: request.skill_content,
    includeGuide: request.include_guide_doc,
    includeInstallGuide: request.include_install_guide,
    guides: deps.guides,
  });

  let reply: AiReply | null = null;
  let refusal: AiModuleError | null = null;
  try {
    reply = await deps.aiModule.invoke({ codeblock: loaded.codeblock, connection: loaded.connection, messages, sessionId, ...(signal ? { signal } : {}) });
  } catch (error) {
    if (!(error instanceof AiModuleError)) throw error;
    if (error.kind !== 'token_limit') throw providerFailure(error.message);
    refusal = error;
  }
  const partial = refusal !== null || reply?.finish_reason === 'length';
  const fields = REQUIRED_FIELDS[request.item_type];
  const parsed = parseGeneration(reply?.content ?? '');
  const generated: Record<string, GeneratedContent> = Object.fromEntries(fields.map((field) => [field, generatedField(field, parsed.members[field], parsed.codeLanguage)]));
  const done = fields.filter((field) => generated[field]?.completed);

  let validation: ValidationResult | null = null;
  const codeblock = generated.codeblock;
  const required = REQUIRED_FUNCTIONS[request.item_type];
  if (!partial && codeblock !== undefined && required !== undefined) {
    validation = await validateGeneratedCode(deps.syntaxChecker, deps.syntaxLimits, codeblock, required);
  }
  const conversation = [...earlier, { role: 'user', content: request.prompt }, { role: 'assistant', content: reply?.content ?? '' }].slice(-MAX_SESSION_MESSAGES);
  const module = !partial && codeblock?.completed ? { language: codeblock.language, code: codeblock.content } : null;
  const tempFilePath = await deps.sessions.put(key, { messages: conversation, generatedContent: generated }, module);

  const message = partial
    ? `Generation stopped at the token limit${refusal ? ` (${summarised(refusal.message)})` : ''}: ${done.length} of ${fields.length} fields complete${done.length > 0 ? ` (${done.join(', ')})` : ''}`
    : (parsed.message ?? (done.length === fields.length ? `Generated ${fields.join(', ')} for the ${request.item_type}` : `The reply had ${done.length} of the ${fields.length} fields (${fields.join(', ')})`));
  const response: AIResponse = {
    message,
    generated_content: generated,
    token_limit_exceeded: partial,
    partial_generation: partial,
    temp_file_path: partial ? null : tempFilePath,
    validation: partial ? null : validation,
  };
  await recordChatHistory(
    deps,
    caller,
    {
      created_item_type: request.item_type,
      ai_provider: request.ai_provider,
      connection_laui: loaded.connectionLaui,
      connection_name: loaded.connectionName,
      messages: [...earlier, { role: 'user', content: request.prompt }, { role: 'assistant', content: reply?.content ?? message }],
      generated_content: generated,
      chat_laui: loaded.chat.laui,
      token_usage: metered.usage(),
    },
    metadata,
  );
  return { status: partial ? 206 : 200, sessionId, body: response };
};
