import type { CodeBlock, Language } from '../../shared/ports/CodeRunner.ts';

export const LANGUAGES: readonly Language[] = ['python', 'javascript'];

/** Missing codeblock, unknown language or no code: the message; else the codeblock. */
export function checkCodeblock(codeblock: CodeBlock | null | undefined): CodeBlock | string {
  if (!codeblock || typeof codeblock !== 'object') return 'missing codeblock';
  const language = typeof codeblock.language === 'string' ? codeblock.language.trim().toLowerCase() : '';
  if (!language) return 'codeblock has no language';
  if (!(LANGUAGES as readonly string[]).includes(language)) return `unsupported language: ${codeblock.language} (supported: ${LANGUAGES.join(', ')})`;
  if (typeof codeblock.code !== 'string' || codeblock.code.trim() === '') return 'codeblock has no code';
  return { language: language as Language, code: codeblock.code };
}
