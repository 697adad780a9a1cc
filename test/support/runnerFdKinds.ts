// Run as a script by ops/worker/NodeForkServer.int.spec.ts in a process holding an inherited fd:
// prints the kinds of the fds a JavaScript run sees, forked from the node fork server and exec'd.
import { ProcessCodeRunner } from '../../ops/worker/ProcessCodeRunner.ts';

const CODE = `const fs = require('node:fs');
exports.run = () => fs.readdirSync('/proc/self/fd').map((fd) => { try { return fs.readlinkSync('/proc/self/fd/' + fd).replace(/\\[\\d+\\]$/, ''); } catch { return 'gone'; } }).sort();`;

const kinds: Record<string, unknown> = {};
for (const [name, nodeForkServer] of [['forked', true], ['execd', false]] as const) {
  const runner = new ProcessCodeRunner({ poolSize: 0, nodeForkServer });
  const outcome = await runner.runAction({ codeblock: { language: 'javascript', code: CODE }, connection: {}, actionVariables: {}, context: {}, limits: { timeoutMs: 10_000, memoryMb: 128, maxOutputBytes: 65_536 } });
  kinds[name] = outcome.ok ? outcome.result : outcome;
  await runner.close();
}
process.stdout.write(`${JSON.stringify(kinds)}\n`);
