import { chown, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CodeBlock, RunLimits, SyntaxCheck } from '../../shared/ports/CodeRunner.ts';
import { CappedLog } from './boundedOutput.ts';
import { runInstall } from './installStep.ts';
import type { RunControl } from './RunControl.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';
import type { BwrapLayout } from './sandbox.ts';
import { readiness } from './startRun.ts';

/** What a syntax check prints is short; more is cut. */
const CHECK_OUTPUT_BYTES = 16 * 1024;

/**
 * `node --check file.js` on Node 20 answers 0 for an ES module with a syntax error (module syntax
 * detection gives up on the file without reporting it), so the code is checked under the name of
 * its module form: `.mjs` when it has top-level import/export statements, else `.cjs`.
 */
export const looksLikeEsModule = (code: string): boolean => /^\s*(?:import\s*[\w{*'"]|export\s+|export\s*\{)/m.test(code);

const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * A codeblock's syntax, checked by its interpreter as an install step of the run's process would be
 * run (the same identity, cgroup and bubblewrap sandbox), without loading the code: generated code
 * is not executed to be checked. Exit code 1 is the interpreter's verdict (a syntax error); any other
 * failure (time limit, no interpreter) means the check could not be made.
 */
export async function syntaxCheck(
  runner: { bwrap: BwrapLayout | undefined },
  proc: RuntimeProcess,
  codeblock: CodeBlock,
  executable: string,
  limits: RunLimits,
  control: RunControl,
): Promise<SyntaxCheck> {
  if (proc.makesOwnDir) {
    const notReady = await readiness(proc, limits, control);
    if (notReady) return { checked: false, reason: 'kind' in notReady && 'message' in notReady ? notReady.message : 'cancelled' };
  }
  const name = codeblock.language === 'python' ? 'user_code.py' : looksLikeEsModule(codeblock.code) ? 'user_code.mjs' : 'user_code.cjs';
  const file = join(proc.dir, name);
  await writeFile(file, codeblock.code, { mode: 0o600 });
  if (proc.runAs) await chown(file, proc.runAs.uid, proc.runAs.gid);
  const command = codeblock.language === 'python' ? `exec ${shellQuote(executable)} -I -m py_compile ${name}` : `exec ${shellQuote(executable)} --check ${name}`;
  const log = new CappedLog(CHECK_OUTPUT_BYTES);
  const failure = await runInstall(command, proc.dir, limits, control, log, proc.runAs, proc.cgroup, runner.bwrap);
  if (failure === null) return { checked: true, ok: true };
  if (failure.kind === 'error' && failure.message.startsWith('bashblock failed (exit code 1)')) {
    return { checked: true, ok: false, ...describeSyntaxError(log.text(), proc.dir, name) };
  }
  return { checked: false, reason: failure.kind === 'cancelled' ? 'cancelled' : failure.message };
}

/** The interpreter's report without the run directory's path and node's own stack frames. */
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
