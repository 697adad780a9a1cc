import type { AiInvocation } from '../../shared/ports/AiModule.ts';

/**
 * The chat item's codeblock as the AI module port takes it (`{language, content}`; the catalog's
 * examples say `code`, spec 2.3 note): null when it has no code, which selects the built-in module.
 */
export const aiModuleOf = (codeblock: unknown): AiInvocation['codeblock'] => {
  if (codeblock === null || typeof codeblock !== 'object') return null;
  const { language, content, code } = codeblock as { language?: unknown; content?: unknown; code?: unknown };
  const text = typeof content === 'string' ? content : typeof code === 'string' ? code : '';
  if (text.trim() === '') return null;
  return { language: typeof language === 'string' ? language : '', content: text };
};

const text = (value: unknown): string | null => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);

/**
 * What the built-in module needs of a chat's connection: `model` always; `api_key` unless
 * `base_url` names another server (a local Ollama, vLLM or llama.cpp server takes any key). The
 * names of those missing; empty when none is. A chat's own module gets its connection as it is.
 */
export const missingLlmCredentials = (connection: Readonly<Record<string, unknown>>): string[] => {
  const missing: string[] = [];
  if (text(connection.model) === null) missing.push('model');
  if (text(connection.api_key) === null && text(connection.base_url) === null) missing.push('api_key');
  return missing;
};
