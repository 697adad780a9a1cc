import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { scryptPasswords } from '../ops/auth/scryptPasswords.ts';
import { loadConfig } from '../ops/config.ts';
import { startService } from '../ops/service.ts';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const ms = (value: number) => Number(value.toFixed(2));

const cookieJar = () => {
  const jar = new Map<string, string>();
  return {
    header: () => [...jar].map(([name, value]) => `${name}=${value}`).join('; '),
    take(response: Response) {
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';');
        const index = pair.indexOf('=');
        jar.set(pair.slice(0, index), pair.slice(index + 1));
      }
    },
  };
};

/**
 * One login as a browser does it: /auth, POST /login (scrypt verify), redirect-with-code,
 * POST /token. Measured sequentially with the production scrypt cost; the baseline is one bare
 * scrypt verification, the floor any password login pays.
 */
export async function benchLogin(opts: { dir: string; rounds?: number }): Promise<Array<Record<string, unknown>>> {
  const rounds = opts.rounds ?? 100;
  const dataDir = mkdtempSync(join(opts.dir, 'login-'));
  const config = loadConfig({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'bench-password-1' });
  const service = await startService(config, { announce: () => undefined });
  const base = service.url;
  const passwords = scryptPasswords();
  const hash = await passwords.hash('bench-password-1');
  const scryptTimes: number[] = [];
  for (let round = 0; round < 20; round += 1) {
    const started = performance.now();
    await passwords.verify('bench-password-1', hash);
    scryptTimes.push(performance.now() - started);
  }
  const times: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const jar = cookieJar();
    const started = performance.now();
    const go = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(new URL(path, base), { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: jar.header() } });
      jar.take(response);
      await response.arrayBuffer();
      return response;
    };
    await go('/api/v1/auth?client_id=bench&redirect_uri=http://localhost/cb&state=s');
    const login = await go('/api/v1/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=admin&password=bench-password-1',
    });
    const redirect = await go(login.headers.get('location') ?? '');
    const code = new URL(redirect.headers.get('location') ?? '').searchParams.get('code');
    const token = await go('/api/v1/token', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'authorization_code', credentials: { code, provider: 'local' } }),
    });
    if (token.status !== 200) throw new Error(`token exchange failed with ${token.status}`);
    times.push(performance.now() - started);
  }
  await service.close();
  rmSync(dataDir, { recursive: true, force: true });
  times.sort((a, b) => a - b);
  scryptTimes.sort((a, b) => a - b);
  return [
    {
      figure: 'auth.login_token_roundtrip',
      unit: 'ms',
      p50: ms(percentile(times, 50)),
      p99: ms(percentile(times, 99)),
      rounds,
      baseline: { figure: 'scrypt.verify (N=2^15, r=8, p=1)', p50: ms(percentile(scryptTimes, 50)), unit: 'ms' },
    },
  ];
}
