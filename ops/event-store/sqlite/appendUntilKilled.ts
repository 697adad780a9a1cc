/**
 * Child process of the kill -9 test: 8 writers append forever, and each acknowledged append is
 * printed as "<writer> <seq>" (the seq it carried in its data) only after the store resolved it. Stdout to a pipe is
 * synchronous on Linux, so every line the parent reads was acknowledged before the kill.
 * Usage: node --import tsx appendUntilKilled.ts <file> [worker-thread|main-thread]
 */
import { openSqliteEventStore, type SqliteWriterPlacement } from './SqliteEventStore.ts';

const [file, placement = 'worker-thread'] = process.argv.slice(2);
if (!file || (placement !== 'worker-thread' && placement !== 'main-thread')) {
  throw new Error('usage: appendUntilKilled.ts <file> [worker-thread|main-thread]');
}
const writerPlacement: SqliteWriterPlacement = placement;
const store = openSqliteEventStore({ file, synchronous: 'full', writer: writerPlacement });

async function writer(index: number): Promise<never> {
  for (let seq = 0; ; seq += 1) {
    await store.append(
      `writer-${index}`,
      [{ type: 'Ticked', data: { seq }, metadata: { user_laui: null, correlation_id: `w${index}-${seq}`, causation_id: null, at: new Date().toISOString() } }],
      seq === 0 ? 'no_stream' : seq - 1,
    );
    process.stdout.write(`${index} ${seq}\n`);
  }
}

await Promise.all(Array.from({ length: 8 }, (_, index) => writer(index)));
