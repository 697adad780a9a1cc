import type * as OpenAiSdk from 'openai';
import { AiModuleError, type AiInvocation, type AiModule, type AiReply } from '../../shared/ports/AiModule.ts';
import { missingLlmCredentials } from '../../command-side/ai/aiModuleOf.ts';
import { isTokenLimitError } from './isTokenLimitError.ts';
import { summarised } from '../../shared/validation/boundedDetail.ts';
import { tokenUsageOf } from './tokenUsage.ts';
import { toOpenAiMessages, type RememberedToolCall } from './toOpenAiMessages.ts';

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

export interface BuiltinAiSettings {
  /** The whole call's budget, retries included (AI_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** Retries of a failed call (connection errors, 408, 409, 429, 5xx; the client's rule). */
  maxRetries: number;
  /** Sessions whose last tool calls are remembered (toOpenAiMessages). */
  rememberedSessions?: number;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);

/**
 * OpenAI's own API takes the newer `max_completion_tokens` (its reasoning models refuse
 * `max_tokens`); OpenAI-compatible servers know `max_tokens`, not always the newer name.
 */
const tokenLimitParameter = (baseURL: string, limit: number): { max_tokens: number } | { max_completion_tokens: number } => {
  let host = '';
  try {
    host = new URL(baseURL).hostname;
  } catch {
    // not a URL: the client's own error says so
  }
  return host === 'api.openai.com' ? { max_completion_tokens: limit } : { max_tokens: limit };
};

let openAiSdk: typeof OpenAiSdk | undefined;
/**
 * The openai package, imported at the first call rather than at start. Its error classes are taken
 * from this same module object, so the `instanceof` checks of providerFailure see the classes the
 * client throws.
 */
const loadOpenAiSdk = async (): Promise<typeof OpenAiSdk> => (openAiSdk ??= await import('openai'));

/**
 * The built-in AI module (a chat item without a codeblock): one chat completion with the `openai`
 * client against the connection's `base_url` (OpenAI's API by default), `token_limit` as the reply's
 * token budget, the tools as function tools. Nothing is read from the service's environment
 * (OPENAI_API_KEY, OPENAI_BASE_URL, ...): the chat item's connection is the whole configuration.
 */
export const builtinAiModule = (settings: BuiltinAiSettings): AiModule => {
  // The tool calls of each session's last reply, so that the results sent back answer them by id.
  const lastCalls = new Map<string, RememberedToolCall[]>();
  const capacity = settings.rememberedSessions ?? 1000;
  const remember = (sessionId: string, calls: RememberedToolCall[]) => {
    lastCalls.delete(sessionId);
    if (calls.length === 0) return;
    lastCalls.set(sessionId, calls);
    if (lastCalls.size > capacity) lastCalls.delete(lastCalls.keys().next().value ?? sessionId);
  };

  return {
    async invoke(invocation: AiInvocation): Promise<AiReply> {
      const { connection } = invocation;
      const missing = missingLlmCredentials(connection);
      if (missing.length > 0) throw new AiModuleError('provider', `LLM credentials missing in the chat's connection: ${missing.join(', ')}`);
      const baseURL = text(connection.base_url) ?? OPENAI_BASE_URL;
      const sdk = await loadOpenAiSdk();
      const client = new sdk.OpenAI({
        // A local server needs no key, but the client wants one.
        apiKey: text(connection.api_key) ?? 'none',
        baseURL,
        organization: text(connection.organization),
        // null, not undefined: undefined would make the client read OPENAI_* from the service's environment.
        adminAPIKey: null,
        project: null,
        webhookSecret: null,
        timeout: settings.timeoutMs,
        maxRetries: settings.maxRetries,
        logLevel: 'off',
      });
      const limit = typeof connection.token_limit === 'number' && Number.isInteger(connection.token_limit) && connection.token_limit > 0 ? connection.token_limit : null;
      const deadline = AbortSignal.timeout(settings.timeoutMs);
      const signal = invocation.signal ? AbortSignal.any([invocation.signal, deadline]) : deadline;
      const tools = invocation.tools ?? [];
      try {
        const completion = await client.chat.completions.create(
          {
            model: text(connection.model) ?? '',
            messages: toOpenAiMessages(invocation.messages, lastCalls.get(invocation.sessionId)),
            ...(limit === null ? {} : tokenLimitParameter(baseURL, limit)),
            ...(tools.length > 0
              ? { tools: tools.map((tool) => ({ type: 'function' as const, function: { name: tool.name, description: tool.description, parameters: tool.input_schema } })) }
              : {}),
          },
          { signal },
        );
        const choice = completion.choices?.[0];
        if (!choice) throw new AiModuleError('provider', 'the provider answered without a choice');
        const calls = (choice.message.tool_calls ?? []).flatMap((call) =>
          call.type === 'function' ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }] : [],
        );
        remember(invocation.sessionId, calls);
        return {
          content: choice.message.content ?? choice.message.refusal ?? '',
          finish_reason: choice.finish_reason ?? null,
          tool_calls: calls.map((call) => ({ name: call.name, arguments: call.arguments })),
          usage: tokenUsageOf(completion.usage),
        };
      } catch (error) {
        throw providerFailure(error, baseURL, settings.timeoutMs, deadline, sdk);
      }
    },
  };
};

/**
 * A failed call as the port's error: `token_limit` for a token or context limit, else `provider`.
 * An HTTP error is its status and, when the body is an OpenAI-style `{error: {message}}`, that
 * message summarised (at most 200 characters, one line); any other body is not quoted at all. The
 * base_url is the chat's, so it may point at any server the service can reach: the openai client's
 * own message would relay that server's whole answer (an internal page, up to the detail bound).
 */
const providerFailure = (
  error: unknown,
  baseURL: string,
  timeoutMs: number,
  deadline: AbortSignal,
  { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError }: typeof OpenAiSdk,
): AiModuleError => {
  if (error instanceof AiModuleError) return error;
  if (error instanceof APIUserAbortError) {
    return new AiModuleError('provider', deadline.aborted ? `no answer from the provider within ${timeoutMs / 1000} s` : 'the call to the provider was cancelled');
  }
  if (error instanceof APIConnectionTimeoutError) return new AiModuleError('provider', `no answer from the provider within ${timeoutMs / 1000} s`);
  if (error instanceof APIConnectionError) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return new AiModuleError('provider', summarised(`could not reach the provider at ${baseURL}${cause}`));
  }
  if (error instanceof APIError) {
    const body = (error.error ?? {}) as { message?: unknown; type?: unknown; code?: unknown };
    const details = {
      message: typeof body.message === 'string' ? body.message : error.message,
      code: error.code ?? (typeof body.code === 'string' ? body.code : null),
      type: error.type ?? (typeof body.type === 'string' ? body.type : null),
      status: error.status ?? null,
    };
    const status = error.status ?? 'error';
    const said = typeof body.message === 'string' && body.message.trim() !== '' ? summarised(`${status} ${body.message}`) : `${status} (the provider's answer had no error message; it is not shown)`;
    return new AiModuleError(isTokenLimitError(details) ? 'token_limit' : 'provider', said);
  }
  return new AiModuleError('provider', summarised(error instanceof Error ? error.message : String(error)));
};
