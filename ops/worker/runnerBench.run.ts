/**
 * Runs the code runner benchmark alone: npx tsx ops/worker/runnerBench.run.ts [seconds] [exec|steps] [python|javascript]
 * (the protocol and language arguments are for comparisons; the default is the runner's protocol, both languages).
 */
import type { Language } from '../../shared/ports/CodeRunner.ts';
import { benchRunner } from './runnerBench.ts';

const seconds = process.argv[2] ? Number(process.argv[2]) : undefined;
const protocol = process.argv[3] === 'steps' || process.argv[3] === 'exec' ? process.argv[3] : undefined;
const language = process.argv[4] === 'python' || process.argv[4] === 'javascript' ? (process.argv[4] as Language) : undefined;
for (const figure of await benchRunner({ seconds, ...(protocol ? { protocol } : {}), ...(language ? { languages: [language] } : {}) })) {
  console.log(JSON.stringify({ ...figure, ...(protocol ? { protocol } : {}) }));
}
