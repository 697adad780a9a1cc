import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../ops/config.ts';
import { startService } from '../ops/service.ts';
import { loginToken } from './catalogBench.ts';
import { lowLoadLatency } from './latencyFigures.ts';

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
      figures.push({
        figure: `action.noop.roundtrip.${language}`,
        ...(await lowLoadLatency(rounds, 25, async () => {
          await post('/action/run', { item_type: 'action', item_laui: laui });
        })),
      });
    }
    return figures;
  } finally {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
