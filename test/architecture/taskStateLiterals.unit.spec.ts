import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TASK_STATES } from '../../shared/item-types/schemas/task.ts';

/**
 * Issue 34: no task state is written outside the lifecycle module. Callers name a trigger and the
 * table (shared/task/transitions.ts, with runLifecycle.ts and the backfill extension of its
 * changes, backfillRun.ts) gives the state; a task without a state reads as INITIAL_STATE, and the
 * scheduler's lists are the table's rows. Read from the sources: a `state: 'running'` or a
 * `?? 'scheduled'` added anywhere else fails here, naming the file and the line.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FOLDERS = ['command-side', 'query-side', 'projections', 'shared', 'ops'];

/** Where task states are defined and decided: the vocabulary (the item type) and the lifecycle. */
const LIFECYCLE = new Set(['shared/item-types/schemas/task.ts', 'shared/task/transitions.ts', 'shared/task/runLifecycle.ts', 'shared/task/backfill/backfillRun.ts']);

/**
 * Files whose `state` is another thing's, named with what it is: a backfill step's outcome, a hook's
 * status, an action run's. Their values share words with the task states.
 */
const OTHER_STATES = new Map([
  ['command-side/backfill/backfillDriver.ts', "a backfill step's outcome"],
  ['shared/task/backfill/backfillState.ts', "a backfill step's state"],
  ['command-side/action/runHooks.ts', "a hook's status (actions_status)"],
]);

const STATE = TASK_STATES.join('|');
/** A state written into an object (`state: 'x'`) or given as a task's default (`.state ?? 'x'`). */
const WRITTEN = new RegExp(`\\bstate:\\s*'(${STATE})'|\\bstate\\s*\\?\\?\\s*'(${STATE})'`);

const sources = (): string[] =>
  FOLDERS.flatMap((folder) =>
    readdirSync(join(ROOT, folder), { withFileTypes: true, recursive: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.includes('.spec.') && !entry.parentPath.includes('node_modules') && !entry.parentPath.includes('/console/app'))
      .map((entry) => relative(ROOT, join(entry.parentPath, entry.name))),
  );

/** `file:line: text` of each line writing a task state outside the lifecycle. */
export const stateWrites = (files: ReadonlyArray<{ path: string; text: string }>): string[] =>
  files.flatMap(({ path, text }) =>
    LIFECYCLE.has(path) || OTHER_STATES.has(path)
      ? []
      : text.split('\n').flatMap((line, index) => (WRITTEN.test(line) && !line.trimStart().startsWith('//') && !line.trimStart().startsWith('*') ? [`${path}:${index + 1}: ${line.trim()}`] : [])),
  );

describe('architecture: task states are written by the lifecycle alone (issue 34)', () => {
  it('given every production source, when its lines are read, then none outside the lifecycle writes a task state or defaults one', () => {
    const found = stateWrites(sources().map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') })));
    expect(found, found.join('\n')).to.deep.equal([]);
  });

  it('given made-up sources, when read, then a written state and a default are found, a trigger and the lifecycle are not (the check can fail)', () => {
    const found = stateWrites([
      { path: 'command-side/task/somewhere.ts', text: "const next = { state: 'running' };\nconst now = task.state ?? 'scheduled';\nconst fine = decideRun(task, { trigger: 'PickedUp' });\nconst other = error.status ?? 'error';" },
      { path: 'shared/task/transitions.ts', text: "const reset = { state: 'scheduled' };" },
    ]);
    expect(found).to.deep.equal(["command-side/task/somewhere.ts:1: const next = { state: 'running' };", "command-side/task/somewhere.ts:2: const now = task.state ?? 'scheduled';"]);
  });
});
