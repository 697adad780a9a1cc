// The functions that allocate most in a V8 sampling heap profile (.heapprofile, from
// bench/profileAllocations.ts): `node bench/allocationTop.mjs <file> [n]`. One JSON line per
// function: its own allocations (self) and those of everything it called (total), as shares of the
// profile's bytes. A function reached along several paths counts once per sample in `total`.
import { readFileSync } from 'node:fs';

const [file, count = '20'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const where = (url) => {
  if (!url) return '(native)';
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules >= 0) return `node_modules/${path.slice(modules + 14).split('/')[0]}`;
  const root = path.search(/\/(command-side|shared|projections|query-side|ops|bench)\//) + 1;
  return root > 0 ? path.slice(root) : path;
};
const self = new Map();
const total = new Map();
let bytes = 0;
const walk = (node, above) => {
  const frame = node.callFrame;
  const key = `${frame.functionName || '(anonymous)'} ${where(frame.url)}:${frame.lineNumber + 1}`;
  bytes += node.selfSize;
  self.set(key, (self.get(key) ?? 0) + node.selfSize);
  const path = new Set(above).add(key);
  for (const item of path) total.set(item, (total.get(item) ?? 0) + node.selfSize);
  for (const child of node.children) walk(child, path);
};
walk(profile.head, new Set());
const share = (value) => `${((100 * value) / Math.max(bytes, 1)).toFixed(1)}%`;
console.log(JSON.stringify({ sampled_mb: Number((bytes / 1048576).toFixed(1)) }));
for (const [item, value] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(count))) {
  console.log(JSON.stringify({ item, self: share(value), total: share(total.get(item) ?? 0) }));
}
