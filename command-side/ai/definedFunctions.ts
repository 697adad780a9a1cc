const escape = (name: string): string => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether generated code defines a module-level function, read from its text: generated code is
 * checked, never run, before anyone saved it (loading it would run its top-level statements, and
 * its imports may need its bashblock first). The runtime's own check when the code runs stays the
 * authority; this one knows the usual forms:
 * - Python: `def name(` or `async def name(` at the start of a line, or `name = ...` there;
 * - JavaScript: `function name(` (exported, async or not), `const|let|var name =`,
 *   `exports.name =` / `module.exports.name =`, `export { name }`, or `name` as a member of a
 *   `module.exports = {...}` / `export default {...}` object.
 */
export const definesFunction = (language: string, code: string, name: string): boolean => {
  const n = escape(name);
  if (language === 'python') return new RegExp(`^(?:async\\s+)?def\\s+${n}\\s*\\(|^${n}\\s*=`, 'm').test(code);
  const forms = [
    `\\bfunction\\s*\\*?\\s*${n}\\s*\\(`,
    `\\b(?:const|let|var)\\s+${n}\\s*=`,
    `\\bexports\\.${n}\\s*=`,
    `\\bexport\\s*\\{[^}]*\\b${n}\\b[^}]*\\}`,
  ];
  if (forms.some((form) => new RegExp(form).test(code))) return true;
  const object = /(?:module\.exports|export\s+default)\s*=?\s*\{([\s\S]*)\}/.exec(code);
  return object !== null && new RegExp(`(?:^|[{,\\s])(?:async\\s+)?${n}\\s*(?:[,(:}]|$)`, 'm').test(object[1] ?? '');
};
