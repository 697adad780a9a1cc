import { expect } from 'chai';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { startTestService, ADMIN, type TestService } from '../../test/support/testService.ts';
import { rawRequest, type RawReply } from '../../test/support/rawRequest.ts';
import { routesOf, type Route } from '../../test/support/appRoutes.ts';
import { startRole, stopRole, type RoleProcess } from '../../test/support/roleProcess.ts';
import { recordedFetch } from '../../test/support/trafficRecorder.ts';

/**
 * Compressed bodies that lie (cut short, inflating past BODY_LIMIT, corrupted, under an encoding
 * name that does not exist) against every route: each is refused with a 4xx `{detail}` and the
 * service still answers /healthz afterwards. The attack that ended the process: a ~1 KiB gzip body
 * inflating just over BODY_LIMIT with its trailer cut got its 413, then the inflate stream, its
 * listeners gone with the refusal, failed at the body's end with an uncaught `Z_BUF_ERROR`.
 */

const LIMIT = 1024 * 1024;
const SEED = Number(process.env.FUZZ_SEED ?? 20_240_611);
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const TIME_LIMIT_MS = 40_000;

type Encoding = 'gzip' | 'deflate' | 'br';
const compress = (encoding: Encoding, data: Buffer): Buffer =>
  encoding === 'gzip' ? gzipSync(data, { level: 9 }) : encoding === 'deflate' ? deflateSync(data, { level: 9 }) : brotliCompressSync(data);
/** Bytes of the format's trailer: gzip's CRC and size, zlib's Adler-32; brotli has none, its last byte ends the stream. */
const TRAILER: Record<Encoding, number> = { gzip: 8, deflate: 4, br: 1 };

/** A JSON text of `bytes` bytes: one string field of repeated letters (compresses about a thousandfold). */
const jsonOf = (bytes: number): Buffer => Buffer.from(`{"pad":"${'a'.repeat(bytes - 10)}"}`);

const bombs = new Map<string, Buffer>();
/** A body inflating to just over BODY_LIMIT (1 KiB past it), compressed, its trailer cut: the attack. */
const truncatedBomb = (encoding: Encoding): Buffer => {
  const key = `cut-${encoding}`;
  let body = bombs.get(key);
  if (body === undefined) {
    const whole = compress(encoding, jsonOf(LIMIT + 1024));
    body = whole.subarray(0, whole.length - TRAILER[encoding]);
    bombs.set(key, body);
  }
  return body;
};
/** A complete, valid body inflating to `over` bytes past BODY_LIMIT. */
const wholeBomb = (encoding: Encoding, over: number): Buffer => compress(encoding, jsonOf(LIMIT + over));

/**
 * Paths that answer a refused body in their own terms: POST /logs/query is HTTP 200 `{error}` (the
 * spec), /mcp a JSON-RPC error.
 */
const ANSWERS_ITS_OWN_REFUSALS = new Set(['/api/v1/logs/query', '/mcp']);
/** Methods whose bodies the parser reads; a GET's body is never read (the route answers as usual). */
const PARSED = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const SAMPLE_LAUI = '65a0000000000000000000ff';

const post = (url: string, path: string, encoding: string, body: Buffer, method = 'POST', token?: string): Promise<RawReply> =>
  rawRequest(url, {
    method,
    path,
    headers: [['Content-Type', 'application/json'], ['Content-Encoding', encoding], ...(token === undefined ? [] : [['Authorization', `Bearer ${token}`] as const])],
    body,
    // The event stream (SSE) never ends by itself: its status line is the answer.
    headOnly: path === '/api/v1/events/stream',
  });

const detailOf = (reply: RawReply): unknown => {
  try {
    return (JSON.parse(reply.body) as { detail?: unknown }).detail;
  } catch {
    return undefined;
  }
};

describe('Compressed bodies never end the process (body parser streams)', function () {
  this.timeout(240_000);
  let svc: TestService;
  let token: string;
  let routes: Route[];
  /** Uncaught exceptions seen while this suite runs (observed only: mocha still fails the test). */
  const uncaught: unknown[] = [];
  const monitor = (error: unknown): void => void uncaught.push(error);

  before(async () => {
    process.on('uncaughtExceptionMonitor', monitor);
    svc = await startTestService({ BODY_LIMIT: '1mb' });
    token = (await svc.login()).token;
    routes = routesOf(svc.service.app);
  });
  after(async () => {
    process.off('uncaughtExceptionMonitor', monitor);
    await svc?.stop();
  });

  /** /healthz answers, and nothing was thrown where no one listened (a late stream error shows within a turn or two). */
  const expectAlive = async (after: string): Promise<void> => {
    const health = await svc.client().get('/healthz');
    expect(health.status, `healthz after ${after}`).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(uncaught.map(String), `uncaught after ${after}`).to.deep.equal([]);
  };

  it('given the attack (a ~1 KiB gzip body inflating just over BODY_LIMIT, trailer cut), when POSTed anonymously to /api/v1/login and an unknown path, then 413 {detail} and the service still answers /healthz', async () => {
    const body = truncatedBomb('gzip');
    expect(body.length).to.be.below(1100);
    for (const path of ['/api/v1/login', '/no/such/route']) {
      const reply = await post(svc.service.url, path, 'gzip', body);
      expect(reply.status, reply.body).to.equal(413);
      expect(JSON.parse(reply.body)).to.deep.equal({ detail: 'Request body too large' });
      await expectAlive(`the gzip bomb on ${path}`);
    }
  });

  it('given the same attack in deflate and brotli, when POSTed, then 413 {detail} and the service lives', async () => {
    for (const encoding of ['deflate', 'br'] as const) {
      for (const path of ['/api/v1/login', '/no/such/route']) {
        const reply = await post(svc.service.url, path, encoding, truncatedBomb(encoding));
        expect(reply.status, `${encoding} ${path}: ${reply.body}`).to.equal(413);
        expect(JSON.parse(reply.body)).to.deep.equal({ detail: 'Request body too large' });
        await expectAlive(`the ${encoding} bomb on ${path}`);
      }
    }
  });

  it('given every route, when each gets the cut bomb in gzip, deflate and br with its own method, then never a 5xx, a 413 wherever the body is read, and /healthz after each', async () => {
    const failures: string[] = [];
    for (const route of routes) {
      const path = route.path.replace(/:[A-Za-z_]+/g, SAMPLE_LAUI).replace(/\{\/\*[A-Za-z_]+\}/g, '');
      for (const encoding of ['gzip', 'deflate', 'br'] as const) {
        const reply = await post(svc.service.url, path, encoding, truncatedBomb(encoding), route.method, token);
        const key = `${route.method} ${route.path}`;
        const expected = !PARSED.has(route.method) ? 'any' : ANSWERS_ITS_OWN_REFUSALS.has(route.path) ? 'own' : 413;
        if (reply.status === null || reply.status >= 500 || (expected === 413 && reply.status !== 413)) {
          failures.push(`${key} ${encoding}: ${String(reply.status)} ${reply.body.slice(0, 200)}`);
        }
      }
      await expectAlive(`${route.method} ${route.path}`);
    }
    expect(failures, failures.slice(0, 10).join('\n')).to.deep.equal([]);
  });

  it(`given generated lying bodies (cut, oversized, corrupted, mislabelled; seed ${SEED}, ${RUNS} runs) on every route, then 4xx with {detail} wherever the body is read, never 5xx, and /healthz after each`, async () => {
    const small = jsonOf(2000);
    const body = fc.oneof(
      fc.record({ kind: fc.constant('cut bomb'), encoding: fc.constantFrom<Encoding>('gzip', 'deflate', 'br') }).map(({ kind, encoding }) => ({ kind, encoding, bytes: truncatedBomb(encoding) })),
      fc
        .record({ kind: fc.constant('whole bomb'), encoding: fc.constantFrom<Encoding>('gzip', 'deflate', 'br'), over: fc.constantFrom(1, 1024, LIMIT) })
        .map(({ kind, encoding, over }) => ({ kind: `${kind} +${over}`, encoding, bytes: wholeBomb(encoding, over) })),
      fc
        .record({ encoding: fc.constantFrom<Encoding>('gzip', 'deflate', 'br'), cut: fc.double({ min: 0.05, max: 0.95, noNaN: true }) })
        .map(({ encoding, cut }) => {
          const whole = compress(encoding, small);
          return { kind: `cut at ${cut.toFixed(2)}`, encoding, bytes: whole.subarray(0, Math.max(1, Math.floor(whole.length * cut))) };
        }),
      fc
        .record({ encoding: fc.constantFrom<Encoding>('gzip', 'deflate', 'br'), at: fc.nat(), flip: fc.integer({ min: 1, max: 255 }) })
        .map(({ encoding, at, flip }) => {
          const bytes = Buffer.from(compress(encoding, small));
          const index = at % bytes.length;
          bytes[index] = (bytes[index] ?? 0) ^ flip;
          return { kind: `byte ${index} flipped`, encoding, bytes };
        }),
      fc
        .record({ claimed: fc.constantFrom<Encoding>('gzip', 'deflate', 'br'), actual: fc.constantFrom<Encoding>('gzip', 'deflate', 'br') })
        .filter(({ claimed, actual }) => claimed !== actual && !(claimed === 'gzip' && actual === 'deflate') && !(claimed === 'deflate' && actual === 'gzip'))
        .map(({ claimed, actual }) => ({ kind: `${actual} labelled ${claimed}`, encoding: claimed, bytes: compress(actual, small) })),
      fc.uint8Array({ minLength: 1, maxLength: 300 }).chain((random) =>
        fc.constantFrom<Encoding>('gzip', 'deflate', 'br').map((encoding) => ({ kind: 'random bytes', encoding, bytes: Buffer.from(random) })),
      ),
      fc
        .constantFrom('x-gzip', 'GZIP', 'compress', 'zstd', 'gzip, br', 'br;q=1', 'identity, gzip', 'deflate-raw', 'gzip\t', 'x'.repeat(300))
        .map((encoding) => ({ kind: 'unknown encoding', encoding, bytes: gzipSync(small) })),
    );
    const request = fc.record({ route: fc.constantFrom(...routes), body, withToken: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(request, async ({ route, body: generated, withToken }) => {
        const path = route.path.replace(/:[A-Za-z_]+/g, SAMPLE_LAUI).replace(/\{\/\*[A-Za-z_]+\}/g, '');
        const reply = await post(svc.service.url, path, generated.encoding, generated.bytes, route.method, withToken ? token : undefined);
        const what = `${route.method} ${route.path} ${generated.kind} (${generated.encoding}): ${String(reply.status)} ${reply.body.slice(0, 200)}`;
        if (reply.status === null || reply.status >= 500) throw new Error(what);
        if (PARSED.has(route.method) && !ANSWERS_ITS_OWN_REFUSALS.has(route.path)) {
          if (reply.status < 400) throw new Error(`accepted: ${what}`);
          if (detailOf(reply) === undefined) throw new Error(`no {detail}: ${what}`);
        }
        await expectAlive(what);
        return true;
      }),
      { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false, endOnFailure: true },
    );
  });

  it('given a body the parser refuses, when it was not compressed at all, then the refusals keep their usual shape (413 too large, 415 unknown encoding)', async () => {
    const tooLarge = await rawRequest(svc.service.url, { method: 'POST', path: '/api/v1/login', headers: [['Content-Type', 'application/json']], body: jsonOf(LIMIT + 1) });
    expect(tooLarge.status).to.equal(413);
    const unknown = await post(svc.service.url, '/api/v1/login', 'x-gzip', gzipSync(jsonOf(100)));
    expect(unknown.status).to.equal(415);
    expect(JSON.parse(unknown.body)).to.deep.equal({ detail: 'Unsupported Content-Encoding: x-gzip' });
  });
});

describe('npm start survives the gzip bomb (a process of its own)', function () {
  this.timeout(300_000);
  let dataDir: string;
  let running: RoleProcess | undefined;

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-bomb-'));
  });
  after(async () => {
    if (running) await stopRole(running);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('given the service as `npm start` runs it, when the cut gzip bomb is POSTed to /api/v1/login, then 413 and the same process still answers /healthz', async () => {
    const sandbox: Record<string, string> = process.getuid?.() === 0 ? {} : { WORKER_SANDBOX: 'none' };
    running = await startRole('all', { DATA_DIR: dataDir, PORT: '0', ADMIN_PASSWORD: ADMIN.password, SQLITE_SYNCHRONOUS: 'normal', ...sandbox });
    const reply = await post(running.url, '/api/v1/login', 'gzip', truncatedBomb('gzip'));
    expect(reply.status).to.equal(413);
    // A second request on a new connection: the crash came as the first request's body ended.
    const again = await post(running.url, '/no/such/route', 'gzip', truncatedBomb('gzip'));
    expect(again.status).to.equal(413);
    const health = await recordedFetch(`${running.url}/healthz`);
    expect(health.status).to.equal(200);
    const exited = await Promise.race([running.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 200))]);
    expect(exited, running.output().slice(-2000)).to.equal(null);
    expect(running.output()).not.to.include('Unhandled');
  });
});
