import type { RunLimits, SyntaxChecker } from '../../shared/ports/CodeRunner.ts';
import { definesFunction } from './definedFunctions.ts';
import type { GeneratedContent } from './generationFields.ts';

/** One entry of ValidationResult's errors or warnings (spec 2.10). */
export interface ValidationEntry {
  type: 'missing_codeblock' | 'unsupported_language' | 'syntax_error' | 'missing_function' | 'syntax_not_checked';
  message: string;
  line?: number | null;
  function?: string;
}

/** ValidationResult (spec 2.10): valid when there is no error; warnings do not count. */
export interface ValidationResult {
  valid: boolean;
  errors: ValidationEntry[];
  warnings: ValidationEntry[];
}

/**
 * The validation of a generated operator or action codeblock (spec 4.11): its syntax checked in the
 * sandbox by its interpreter (`python3 -m py_compile`, `node --check`; the code is not run) and the
 * required functions looked for (definedFunctions.ts). A check that could not run here (code runs
 * refused on this host) is a warning, not an error.
 */
export const validateGeneratedCode = async (checker: SyntaxChecker, limits: RunLimits, codeblock: GeneratedContent, required: ReadonlyArray<string>): Promise<ValidationResult> => {
  const errors: ValidationEntry[] = [];
  const warnings: ValidationEntry[] = [];
  const done = () => ({ valid: errors.length === 0, errors, warnings });
  if (!codeblock.completed || codeblock.content.trim() === '') {
    errors.push({ type: 'missing_codeblock', message: 'no codeblock was generated' });
    return done();
  }
  if (codeblock.language !== 'python' && codeblock.language !== 'javascript') {
    errors.push({ type: 'unsupported_language', message: `unsupported language: ${codeblock.language || '(none)'} (supported: python, javascript)` });
    return done();
  }
  const syntax = await checker.checkSyntax({ language: codeblock.language, code: codeblock.content }, limits);
  if (!syntax.checked) warnings.push({ type: 'syntax_not_checked', message: `the syntax could not be checked: ${syntax.reason}` });
  else if (!syntax.ok) errors.push({ type: 'syntax_error', message: syntax.message, line: syntax.line });
  for (const name of required) {
    if (!definesFunction(codeblock.language, codeblock.content, name)) {
      errors.push({ type: 'missing_function', message: `the codeblock does not define ${name}`, function: name });
    }
  }
  return done();
};
