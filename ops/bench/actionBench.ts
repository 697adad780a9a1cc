import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config.ts';
import { startService } from '../service.ts';
import { loginToken } from './catalogBench.ts';

/** Pause between runs of the low-load figure. */
const LOW_LOAD_GAP_MS = 100;
const percentile = (sorted: number[], p: number) => Number((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN).toFixed(2));
const NOOP = {
  python: 'def run(connection, action_variables, context):\n    return {"ok": True}\n',
  javascript: 'export function run(connection, actionVariables, context) { return { ok: true }; }\n',
};

/** Stand-alone no-op action round trip: POST /action/run to response, a fresh process per run (warm pool). */
export async function benchActions(opts: { dir: string; rounds?: number }): Promise<Array<Record<string, unknown>>> {
  const rounds = opts.rounds ?? 60;
  const dataDir = mkdtempSync(join(opts.dir, 'actions-'));
  const service = await startService(loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'bench-password-1' }), { announce: () => undefined });
  try {
    const headers = { authorization: `Bearer ${await loginToken(service, 'bench-password-1')}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${service.url}/api/v1${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const json = (await response.json()) as Record<string, unknown>;
      if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const tree = (await post('/catalog/bootstrap', { account_name: 'bench' })) as { account_laui: string; project_laui: string; folders: Record<string, string> };
    const figures: Array<Record<string, unknown>> = [];
    for (const language of ['python', 'javascript'] as const) {
      const laui = String(
        (
          await post('/catalog/create', {
            item_type: 'action',
            name: `${language}-noop.action`,
            parent_laui: tree.folders.action,
            project_laui: tree.project_laui,
            account_laui: tree.account_laui,
            codeblock: { language, content: NOOP[language] },
            bashblock: { language: 'bash', content: '' },
          })
        ).item_laui,
      );
      // Low load: one run every LOW_LOAD_GAP_MS, so the previous run's pool refill is done; back to
      // back (the next request the moment the answer arrives) is reported beside it.
      const measure = async (gapMs: number) => {
        const times: number[] = [];
        for (let round = 0; round < rounds; round += 1) {
          if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
          const started = performance.now();
          await post('/action/run', { item_type: 'action', item_laui: laui });
          times.push(performance.now() - started);
        }
        return times.sort((a, b) => a - b);
      };
      const low = await measure(LOW_LOAD_GAP_MS);
      const backToBack = await measure(0);
      figures.push({
        figure: `action.noop.roundtrip.${language}`,
        unit: 'ms',
        p50: percentile(low, 0.5),
        p99: percentile(low, 0.99),
        rounds,
        load: `one run every ${LOW_LOAD_GAP_MS} ms`,
        back_to_back: { p50: percentile(backToBack, 0.5), p99: percentile(backToBack, 0.99) },
        target: 'p50 <= 25 ms',
        pass: percentile(low, 0.5) <= 25,
      });
    }
    return figures;
  } finally {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
