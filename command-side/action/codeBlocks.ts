import type { CodeBlock } from '../../shared/ports/CodeRunner.ts';

/** Catalog create examples say `code`, the action endpoint `content`: both are accepted everywhere. */
export const normaliseCodeBlock = (value: unknown): CodeBlock | null => {
  if (value === null || typeof value !== 'object') return null;
  const block = value as { language?: unknown; code?: unknown; content?: unknown };
  const code = typeof block.code === 'string' ? block.code : typeof block.content === 'string' ? block.content : null;
  // Not String(): a language of another JSON type (`{"toString": "x"}`) is no language, not a 500.
  const language = typeof block.language === 'string' ? block.language.toLowerCase() : '';
  const normalised = language === 'py' || language === 'python3' ? 'python' : language === 'js' || language === 'node' || language === 'typescript' ? 'javascript' : language;
  if (code === null || (normalised !== 'python' && normalised !== 'javascript')) return null;
  return { language: normalised, code };
};

/** A bashblock's install step: `code` or `content` (spec 2.3 note); empty means none. */
export const installStep = (value: unknown): { code: string } | null => {
  if (value === null || typeof value !== 'object') return null;
  const block = value as { code?: unknown; content?: unknown };
  const code = typeof block.code === 'string' ? block.code : typeof block.content === 'string' ? block.content : null;
  return code !== null && code.trim() !== '' ? { code } : null;
};

/**
 * A codeblock an action or operator can run: normalised, with code that is not blank. An action is
 * its codeblock's `run` (spec 4.4 answers what it returns); a bashblock is only the install step run
 * before it, so an action whose codeblock is empty has nothing to run (422, not the runner's 500).
 */
export const runnableCodeBlock = (value: unknown): CodeBlock | null => {
  const block = normaliseCodeBlock(value);
  return block !== null && block.code.trim() !== '' ? block : null;
};

export const NO_RUNNABLE_CODE =
  'codeblock needs a language (python or javascript) and its code under `code` or `content`; a bashblock alone cannot be run: it is the install step run before the codeblock';
