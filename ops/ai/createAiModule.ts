import type { Clock } from '../../shared/clock.ts';
import type { AiInvocation, AiModule, AiReply } from '../../shared/ports/AiModule.ts';
import type { ModuleRunner, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { aiModuleOf } from '../../command-side/ai/aiModuleOf.ts';
import { builtinAiModule } from './builtinAiModule.ts';
import { sandboxAiModule } from './sandboxAiModule.ts';

export interface AiModuleDeps {
  runner: ModuleRunner;
  logger: Logger;
  clock: Clock;
  /** AI_TIMEOUT_SECONDS: one invocation's budget, either module. */
  timeoutMs: number;
  /** AI_MAX_RETRIES: the built-in module's retries of a failed call (within timeoutMs). */
  maxRetries: number;
  /** A user module's memory and output caps (the workers' settings). */
  limits: Pick<RunLimits, 'memoryMb' | 'maxOutputBytes'>;
}

/**
 * The service's AiModule (shared/ports/AiModule.ts): a codeblock with code in it (`content` or
 * `code`) is the chat's own module, run in the sandbox; none or an empty one, the built-in module.
 */
export const createAiModule = (deps: AiModuleDeps): AiModule => {
  const builtin = builtinAiModule({ timeoutMs: deps.timeoutMs, maxRetries: deps.maxRetries });
  const sandboxed = sandboxAiModule({ runner: deps.runner, logger: deps.logger, clock: deps.clock, limits: { ...deps.limits, timeoutMs: deps.timeoutMs } });
  return {
    invoke: (invocation: AiInvocation): Promise<AiReply> => (aiModuleOf(invocation.codeblock) !== null ? sandboxed : builtin).invoke(invocation),
  };
};
