import type { GeneratedContent, GeneratedField } from './generationFields.ts';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
};

/** The reply's JSON text (a ```json fence's, else from the first `{`) and the text around it. */
const locateJson = (reply: string): { json: string; outside: string } | null => {
  for (const match of reply.matchAll(/```[a-zA-Z]*[ \t]*\r?\n?([\s\S]*?)(?:```|$)/g)) {
    const inner = (match[1] ?? '').trim();
    if (inner.startsWith('{')) return { json: inner, outside: (reply.slice(0, match.index) + reply.slice(match.index + match[0].length)).trim() };
  }
  const start = reply.indexOf('{');
  if (start < 0) return null;
  const end = reply.lastIndexOf('}');
  // A whole object may have text after it; one that does not parse to its last `}` was cut: all of it.
  if (end > start && parse(reply.slice(start, end + 1)) !== undefined) return { json: reply.slice(start, end + 1), outside: (reply.slice(0, start) + reply.slice(end + 1)).trim() };
  return { json: reply.slice(start), outside: reply.slice(0, start).trim() };
};

/**
 * The members of a JSON object that were written to their end, from a text that may stop anywhere
 * (a reply cut at the token limit): each top-level member up to a `,` or the closing `}` is parsed
 * on its own; the last one without either counts only when its value is closed by its own
 * delimiter (an object, a list or a string: a number or a literal might have been cut).
 */
export const completeMembers = (json: string): Record<string, unknown> => {
  const members: Record<string, unknown> = {};
  const take = (span: string, last: boolean) => {
    const parsed = parse(`{${span}}`);
    if (!isObject(parsed)) return;
    for (const [key, value] of Object.entries(parsed)) {
      if (last && !(typeof value === 'string' || typeof value === 'object')) continue;
      members[key] = value;
    }
  };
  const open = json.indexOf('{');
  if (open < 0) return members;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let from = open + 1;
  for (let index = open; index < json.length; index += 1) {
    const char = json[index];
    if (inString) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{' || char === '[') depth += 1;
    else if (char === '}' || char === ']') {
      depth -= 1;
      if (depth === 0) {
        take(json.slice(from, index), false);
        return members;
      }
    } else if (char === ',' && depth === 1) {
      take(json.slice(from, index), false);
      from = index + 1;
    }
  }
  if (!inString) take(json.slice(from), true);
  return members;
};

const normaliseLanguage = (value: unknown): string => {
  const language = typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (language === 'py' || language === 'python3') return 'python';
  if (language === 'js' || language === 'node' || language === 'nodejs' || language === 'typescript') return 'javascript';
  return language;
};

export interface ParsedGeneration {
  /** The reply's members (every one when the JSON was whole, those written to their end otherwise). */
  members: Record<string, unknown>;
  /** The codeblock's language when the reply named it, even in a codeblock cut before its end. */
  codeLanguage: string | null;
  /** The reply's "message", else its text outside the JSON; null when neither says anything. */
  message: string | null;
}

/** One JSON object, bare or in a ```json fence (the form the system prompt asks for), or what of it was written. */
export const parseGeneration = (reply: string): ParsedGeneration => {
  const located = locateJson(reply);
  if (located === null) return { members: {}, codeLanguage: null, message: reply.trim() === '' ? null : reply.trim() };
  const whole = parse(located.json);
  const members = isObject(whole) ? whole : completeMembers(located.json);
  const message = typeof members.message === 'string' && members.message.trim() !== '' ? members.message.trim() : located.outside !== '' ? located.outside : null;
  const named = /"codeblock"\s*:\s*\{\s*"language"\s*:\s*"([^"\\]{1,40})"/.exec(located.json);
  return { members, codeLanguage: named?.[1] ? normaliseLanguage(named[1]) : null, message };
};

const codeOf = (value: unknown): { language: unknown; code: string } | null => {
  if (typeof value === 'string') return { language: undefined, code: value };
  if (!isObject(value)) return null;
  const code = typeof value.content === 'string' ? value.content : typeof value.code === 'string' ? value.code : null;
  return code === null ? null : { language: value.language, code };
};

const MISSING = (language: string): GeneratedContent => ({ completed: false, content: '', language });

/**
 * One generated field as AIResponse's GeneratedContent (spec 2.10): codeblock and bashblock from
 * `{language, content}` (or `code`, or a bare string), payload and connection from an object (or a
 * string holding one), shown as indented JSON. A codeblock without a language (or cut before its
 * code) takes `languageHint` (what the reply named), else python. A codeblock needs code; a bashblock may be empty
 * (no install step). Missing or malformed: completed false, empty content.
 */
export const generatedField = (field: GeneratedField, value: unknown, languageHint: string | null = null): GeneratedContent => {
  switch (field) {
    case 'codeblock': {
      const block = codeOf(value);
      const language = normaliseLanguage(block?.language) || languageHint || 'python';
      return block !== null && block.code.trim() !== '' ? { completed: true, content: block.code, language } : MISSING(language);
    }
    case 'bashblock': {
      const block = codeOf(value);
      return block !== null ? { completed: true, content: block.code, language: 'bash' } : MISSING('bash');
    }
    case 'payload':
    case 'connection': {
      const object = typeof value === 'string' ? parse(value) : value;
      return isObject(object) ? { completed: true, content: JSON.stringify(object, null, 2), language: 'json' } : MISSING('json');
    }
  }
};
