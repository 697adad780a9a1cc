import type { TokenUsage } from '../../shared/ports/AiModule.ts';

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0);

/**
 * Token counts in OpenAI's `usage` shape (`prompt_tokens`, `completion_tokens`, `total_tokens`), as
 * the built-in module's provider or a chat's own module reported them; null when there are none.
 * Counts that are not non-negative numbers read 0; a missing total is the sum of the others.
 */
export const tokenUsageOf = (usage: unknown): TokenUsage | null => {
  if (usage === null || typeof usage !== 'object' || Array.isArray(usage)) return null;
  const { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total } = usage as Record<string, unknown>;
  return { prompt_tokens: count(prompt), completion_tokens: count(completion), total_tokens: count(total) || count(prompt) + count(completion) };
};
