import { AppError } from '../../shared/errors.ts';
import type { AiModule, TokenUsage } from '../../shared/ports/AiModule.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import { summarised } from '../../shared/validation/boundedDetail.ts';

/** An AI module that adds up the tokens of every call made through it (one request's calls). */
export interface MeteredModule {
  module: AiModule;
  /** The sum of what the calls reported; null when none reported any (a chat module that does not say). */
  usage(): TokenUsage | null;
  calls(): number;
}

export const meteredModule = (inner: AiModule): MeteredModule => {
  const total: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  let reported = false;
  let calls = 0;
  return {
    module: {
      async invoke(invocation) {
        calls += 1;
        const reply = await inner.invoke(invocation);
        if (reply.usage) {
          reported = true;
          total.prompt_tokens += reply.usage.prompt_tokens;
          total.completion_tokens += reply.usage.completion_tokens;
          total.total_tokens += reply.usage.total_tokens;
        }
        return reply;
      },
    },
    usage: () => (reported ? { ...total } : null),
    calls: () => calls,
  };
};

/** What one /ai/generate or /ai/agent call did, for its log line. */
export interface AiCall {
  route: 'generate' | 'agent';
  caller: Principal | null;
  chatLaui: string;
  /** The item whose credentials were used: the chat, or the request's connection_laui. */
  connectionLaui: string;
  sessionId: string;
  correlationId: string;
  metered: MeteredModule;
  /** The answer's status, or the error the call failed with. */
  outcome: { status: number } | { error: unknown };
}

/**
 * One API line per AI call that reached the chat's module, answered or failed, anonymous or not
 * (step `ai_call`): who (user_laui and username, or `anonymous`), which chat and credentials, the
 * tokens used and the module calls made. A known caller's call is also a chat_history item; an
 * anonymous one has only this line. Refused calls (401, 403) reach no module and are in the request
 * log only.
 */
export const logAiCall = (logger: Logger, call: AiCall): void => {
  const usage = call.metered.usage();
  const who = call.caller === null ? 'anonymous' : call.caller.username || call.caller.laui;
  const { outcome } = call;
  const failure = 'error' in outcome ? outcome.error : null;
  const status = 'status' in outcome ? outcome.status : failure instanceof AppError ? failure.status : 500;
  const tokens = usage === null ? 'tokens not reported' : `${usage.total_tokens} tokens`;
  logger.log({
    level: status >= 500 ? 'error' : 'info',
    category: 'API',
    step: 'ai_call',
    // Not `session_id`: that would copy the line into the session's log after its end line
    // (followers stop at it); the AI module's own run log is that session.
    ai_session_id: call.sessionId,
    message: `AI ${call.route} on chat ${call.chatLaui} by ${who}: ${status}, ${call.metered.calls()} module call(s), ${tokens}`,
    route: call.route,
    user_laui: call.caller?.laui ?? null,
    username: who,
    chat_laui: call.chatLaui,
    connection_laui: call.connectionLaui,
    status,
    module_calls: call.metered.calls(),
    prompt_tokens: usage?.prompt_tokens ?? null,
    completion_tokens: usage?.completion_tokens ?? null,
    total_tokens: usage?.total_tokens ?? null,
    correlation_id: call.correlationId,
    ...('error' in outcome ? { error: summarised(failure instanceof Error ? failure.message : String(failure)) } : {}),
  });
};

/**
 * The spec's 500 for a provider's or a chat module's failure (`Internal server error: <provider
 * error>`), summarised as a whole (at most 200 characters, one line): whatever server or code
 * failed, its answer is not relayed.
 */
export const providerFailure = (message: string): AppError => new AppError(500, summarised(`Internal server error: ${message}`));
