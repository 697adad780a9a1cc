/** Runs the code runner benchmark alone: npx tsx ops/worker/runnerBench.run.ts [seconds] */
import { benchRunner } from './runnerBench.ts';

const seconds = process.argv[2] ? Number(process.argv[2]) : undefined;
for (const figure of await benchRunner({ seconds })) console.log(JSON.stringify(figure));
