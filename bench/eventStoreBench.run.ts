/** Runs the event store benchmark alone: npx tsx bench/eventStoreBench.run.ts [events] */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { benchEventStore } from './eventStoreBench.ts';

const dir = join(process.cwd(), '.bench-data');
mkdirSync(dir, { recursive: true });
const events = process.argv[2] ? Number(process.argv[2]) : undefined;
for (const figure of await benchEventStore({ dir, events })) console.log(JSON.stringify(figure));
