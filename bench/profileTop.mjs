// The top items of a V8 .cpuprofile by self time: `node bench/profileTop.mjs <file> [n]`. One JSON
// line per item: function, file (repository-relative, or the package under node_modules), self ms
// and share of the sampled time. Used for issue 34's before/after profiles (bench/profileSustained.ts).
import { readFileSync } from 'node:fs';

const [file, count = '15'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const deltas = profile.timeDeltas;
const selfUs = new Map();
profile.samples.forEach((id, index) => selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[index] ?? 0)));
const where = (url) => {
  if (!url) return '(native)';
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules >= 0) return `node_modules/${path.slice(modules + 14).split('/').slice(0, path.slice(modules + 14).startsWith('@') ? 2 : 1).join('/')}`;
  const root = path.indexOf('/h-pipeline/') >= 0 ? path.indexOf('/h-pipeline/') + 12 : path.search(/\/(command-side|shared|projections|query-side|ops|bench)\//) + 1;
  return root > 0 ? path.slice(root) : path;
};
const byItem = new Map();
let total = 0;
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  total += us;
  const name = node.callFrame.functionName || '(anonymous)';
  const key = `${name} ${where(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
  byItem.set(key, (byItem.get(key) ?? 0) + us);
}
const top = [...byItem].filter(([key]) => !key.startsWith('(idle)') && !key.startsWith('(program)') && !key.startsWith('(garbage collector)')).sort((a, b) => b[1] - a[1]);
const gc = [...byItem].filter(([key]) => key.startsWith('(garbage collector)')).reduce((sum, [, us]) => sum + us, 0);
const idle = [...byItem].filter(([key]) => key.startsWith('(idle)')).reduce((sum, [, us]) => sum + us, 0);
console.log(JSON.stringify({ sampled_ms: Math.round(total / 1000), busy_ms: Math.round((total - idle) / 1000), gc_ms: Math.round(gc / 1000) }));
for (const [key, us] of top.slice(0, Number(count))) console.log(JSON.stringify({ item: key, self_ms: Math.round(us / 1000), share: `${((100 * us) / Math.max(total - idle, 1)).toFixed(1)}%` }));
