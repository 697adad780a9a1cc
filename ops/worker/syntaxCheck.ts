import { join } from 'node:path';
import type { CodeBlock, RunLimits, SyntaxCheck } from '../../shared/ports/CodeRunner.ts';
import { CappedLog } from './boundedOutput.ts';
import { runInstall } from './installStep.ts';
import type { Invoke } from './invokeRequest.ts';
import type { RunControl } from './RunControl.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';
import { readiness } from './startRun.ts';

const CHECK_OUTPUT_BYTES = 16 * 1024;

export const looksLikeEsModule = (code: string): boolean => /^\s*(?:import\s*[\w{*'"]|export\s+|export\s*\{)/m.test(code);

const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * A codeblock's syntax, checked by its interpreter as an install step of the run's process would be
 * run (the same identity, cgroup and bubblewrap sandbox), without loading the code: generated code
 * is not executed to be checked. Exit code 1 is the interpreter's verdict (a syntax error); any other
 * failure (time limit, no interpreter) means the check could not be made.
 */
export async function syntaxCheck(
  runner: { invoke: Invoke },
  proc: RuntimeProcess,
  codeblock: CodeBlock,
  executable: string,
  limits: RunLimits,
  control: RunControl,
): Promise<SyntaxCheck> {
  const notReady = await readiness(proc, limits, control);
  if (notReady) return { checked: false, reason: 'kind' in notReady && 'message' in notReady ? notReady.message : 'cancelled' };
  const name = codeblock.language === 'python' ? 'user_code.py' : looksLikeEsModule(codeblock.code) ? 'user_code.mjs' : 'user_code.cjs';
  const command = codeblock.language === 'python' ? `exec ${shellQuote(executable)} -I -m py_compile ${name}` : `exec ${shellQuote(executable)} --check ${name}`;
  const log = new CappedLog(CHECK_OUTPUT_BYTES);
  proc.beginRun(log, CHECK_OUTPUT_BYTES);
  // The check is an install step of the process that holds the code (its own uid, its own directory).
  const failure = await runInstall(proc, runner.invoke, { file: join(proc.dir, name), code: codeblock.code, script: command }, limits, control);
  if (failure === null) return { checked: true, ok: true };
  if (failure.kind === 'error' && failure.message.startsWith('bashblock failed (exit code 1)')) {
    await log.settle();
    return { checked: true, ok: false, ...describeSyntaxError(log.text(), proc.dir, name) };
  }
  return { checked: false, reason: failure.kind === 'cancelled' ? 'cancelled' : failure.message };
}

export const describeSyntaxError = (output: string, dir: string, name: string): { message: string; line: number | null } => {
  const text = output
    .split(`${dir}/`)
    .join('')
    .split('\n')
    .filter((line) => !/^\s+at /.test(line) && !/^Node\.js v/.test(line))
    .join('\n')
    .replace(/\n{2,}/g, '\n')
    .trim();
  const escaped = name.replace(/\./g, '\\.');
  const line = new RegExp(`line (\\d+)`).exec(text) ?? new RegExp(`${escaped}:(\\d+)`).exec(text);
  return { message: text === '' ? 'syntax error' : text, line: line?.[1] ? Number(line[1]) : null };
};
