import { mkdtempSync } from 'node:fs';
import { loadConfig } from '../config.ts';
import { startService } from '../service.ts';
import { loginToken } from './catalogBench.ts';
const service = await startService(loadConfig({ PORT: '0', DATA_DIR: mkdtempSync('/tmp/cp-'), ADMIN_PASSWORD: 'bench-password-1' }), { announce: () => undefined });
const token = await loginToken(service, 'bench-password-1');
const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const tree = (await (await fetch(`${service.url}/api/v1/catalog/bootstrap`, { method: 'POST', headers: auth, body: JSON.stringify({ account_name: 'b' }) })).json()) as { folders: { payload: string } };
let n = 0;
const started = performance.now();
await Promise.all(Array.from({ length: 32 }, async () => {
  while (n < 3000) {
    const i = n++;
    const r = await fetch(`${service.url}/api/v1/catalog/create`, { method: 'POST', headers: auth, body: JSON.stringify({ item_type: 'payload', name: `p${i}`, parent_laui: tree.folders.payload, content: { n: 1 } }) });
    await r.arrayBuffer();
  }
}));
console.log('creates/s', Math.round(3000 / ((performance.now() - started) / 1000)));
await service.close();
