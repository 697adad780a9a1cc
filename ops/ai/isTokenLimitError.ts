/**
 * True when a provider's refusal (or an AI module's exception) says the request did not fit the
 * model's token or context limit: /ai/generate answers 206 for it, as for a reply cut at the
 * limit. Recognised by the error code OpenAI gives (`context_length_exceeded`), llama.cpp's error
 * type (`exceed_context_size_error`) and the wording of OpenAI, vLLM, llama.cpp, Ollama and
 * Anthropic-style servers. A rate limit on tokens per minute is not one: that is a provider error
 * (429), retrying later helps, a shorter request does not need to.
 */
export const isTokenLimitError = (details: { message: string; code?: string | null; type?: string | null; status?: number | null }): boolean => {
  if (details.status === 429) return false;
  if (details.code === 'context_length_exceeded' || details.code === 'string_above_max_length') return true;
  if (details.type === 'exceed_context_size_error') return true;
  return /maximum context length|context[ _]length[ _]exceeded|context window|exceeds? (?:the )?(?:available )?context(?: size| length)?|too many tokens|prompt is too long|input is too long|reduce the length of the messages/i.test(details.message);
};
