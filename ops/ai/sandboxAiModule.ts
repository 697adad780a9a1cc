import type { Clock } from '../../shared/clock.ts';
import { AiModuleError, type AiInvocation, type AiModule, type AiReply } from '../../shared/ports/AiModule.ts';
import type { ModuleRunner, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { secretStringsOf } from '../../shared/item-types/secretFields.ts';
import { normaliseCodeBlock } from '../../command-side/action/codeBlocks.ts';
import { runSessionLog } from '../../shared/task/runSessionLog.ts';
import { aiReplyOf } from './aiReplyOf.ts';
import { isTokenLimitError } from './isTokenLimitError.ts';

export interface SandboxAiModuleDeps {
  runner: ModuleRunner;
  logger: Logger;
  clock: Clock;
  /** AI_TIMEOUT_SECONDS as the time limit; memory and output as for actions. */
  limits: RunLimits;
}

/** The step the lines of an AI module's run are logged under (category TASK, like an action's `action`). */
export const AI_MODULE_STEP = 'ai_module';

/**
 * A chat's own AI module: its codeblock's `run(connection, messages[, tools])` run as an action is
 * (command-side/action/executeAction.ts): a fresh sandboxed process, the connection decrypted as
 * its first argument, its output logged line by line under the invocation's session (category
 * TASK, step `ai_module`, the connection's secrets masked) and an end line. `tools` is passed only
 * when given, so `run(connection, messages)` serves /ai/generate in Python too. A module that fails
 * is the `module` error, or `token_limit` when its exception says the provider refused the request
 * for its token or context limit (isTokenLimitError).
 */
export const sandboxAiModule = (deps: SandboxAiModuleDeps): AiModule => ({
  async invoke(invocation: AiInvocation): Promise<AiReply> {
    const codeblock = normaliseCodeBlock(invocation.codeblock);
    if (codeblock === null) throw new AiModuleError('module', "the chat's codeblock needs a language (python or javascript) and its code under `content` or `code`");
    const connection = invocation.connection;
    const messages = invocation.messages.map((message) => ({ ...message }));
    const args: unknown[] = invocation.tools ? [connection, messages, invocation.tools] : [connection, messages];
    const session = runSessionLog(deps.logger, invocation.sessionId, {}, { category: 'TASK', step: () => AI_MODULE_STEP });
    const startedAt = deps.clock.now();
    const outcome = await deps.runner
      .runModule({ codeblock, args, limits: deps.limits, output: session.output(() => secretStringsOf(connection)) })
      .catch((error: unknown) => ({ ok: false as const, kind: 'error' as const, message: `runner error: ${error instanceof Error ? error.message : String(error)}` }));
    const duration = (deps.clock.now().getTime() - startedAt.getTime()) / 1000;
    const end = { category: 'TASK' as const, step: AI_MODULE_STEP, duration_seconds: duration };
    let result: AiReply | AiModuleError;
    if (outcome.ok) {
      try {
        result = aiReplyOf(outcome.result);
      } catch (error) {
        result = error instanceof AiModuleError ? error : new AiModuleError('module', String(error));
      }
    } else {
      const message = outcome.kind === 'timeout' ? `AI module timed out after ${deps.limits.timeoutMs / 1000} s` : outcome.message;
      result = new AiModuleError(outcome.kind !== 'timeout' && isTokenLimitError({ message }) ? 'token_limit' : 'module', message);
    }
    if (result instanceof AiModuleError) {
      session.end({ ...end, level: 'error', status: 'error', message: `AI module failed: ${result.message}` });
      throw result;
    }
    session.end({ ...end, level: 'info', status: 'success', message: `AI module returned after ${duration} s` });
    return result;
  },
});
