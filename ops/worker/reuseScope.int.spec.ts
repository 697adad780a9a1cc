import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Language, OperatorOutcome, ReuseScope } from '../../shared/ports/CodeRunner.ts';
import { running, until } from '../../test/support/runtimeProcesses.ts';
import { bareOperatorRequest } from './operatorRequests.ts';
import { POISONS_JSON_DECODING as POISON, PROBES_POISON as PROBE } from '../../test/support/operatorSnippets.ts';
import { ProcessCodeRunner } from './ProcessCodeRunner.ts';

/** Marks its start with a file, then waits for a second file before it returns. */
const WAITS: Record<Language, string> = {
  python: `
import os, time
def run(connection, payload, context):
    open(os.path.join(context["dir"], "started"), "w").close()
    while not os.path.exists(os.path.join(context["dir"], "go")):
        time.sleep(0.02)
    return {"pid": os.getpid(), "marker": None, "seen": ""}
`,
  javascript: `
const fs = require('node:fs');
exports.run = async (connection, payload, context) => {
  fs.writeFileSync(context.dir + '/started', '');
  while (!fs.existsSync(context.dir + '/go')) await new Promise((resolve) => setTimeout(resolve, 20));
  return { pid: process.pid, marker: null, seen: '' };
};
`,
};

interface Seen {
  pid: number;
  marker: string | null;
  seen: string;
}

const A_SECRET = 'password-of-user-a-1111';
const B_SECRET = 'password-of-user-b-2222';
const OPERATOR = 'operator-of-a';
const OTHER_OPERATOR = 'operator-of-b';
const scope = (itemLaui: string, actorLaui: string): ReuseScope => ({ itemLaui, actorLaui });

describe('code runner: a reuse process serves one code item of one user (ReuseScope)', function () {
  this.timeout(60_000);
  const runners: ProcessCodeRunner[] = [];
  let scratch: string;
  const runner = (options: ConstructorParameters<typeof ProcessCodeRunner>[0] = {}) => {
    const made = new ProcessCodeRunner({ poolSize: 0, maxIdleReusable: 1, maxIdleReusableTotal: 8, ...options });
    runners.push(made);
    return made;
  };
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'reuse-scope-spec-'));
  });
  after(async () => {
    await Promise.all(runners.map((r) => r.close()));
    rmSync(scratch, { recursive: true, force: true });
  });

  /** One reuse run of `code` on behalf of the scope's user, with that user's connection; then the runner's cleanup. */
  const run = async (on: ProcessCodeRunner, language: Language, code: string, reuseScope: ReuseScope | null, secret = A_SECRET, context: Record<string, unknown> = {}): Promise<Seen> => {
    const outcome: OperatorOutcome = await on.runOperator({ ...bareOperatorRequest({ language, code }), connection: { password: secret }, context, reuse: true, reuseScope });
    if (outcome.status !== 'success') throw new Error(`run failed: ${JSON.stringify(outcome)}`);
    await on.cleanedUp();
    return outcome.output as unknown as Seen;
  };

  for (const language of ['python', 'javascript'] as const) {
    describe(language, () => {
      it(`given user A's reuse operator that wrapped ${language === 'python' ? 'json.loads' : 'JSON.parse'} and set a marker, when user B runs it and another operator, then B gets other processes without the marker and the hook never sees B's connection; A's next run reuses its process`, async () => {
        const own = runner();
        // Given: A's first run poisons its process.
        const first = await run(own, language, POISON[language], scope(OPERATOR, 'user-a'));
        expect(first.marker).to.equal(null);

        // When: B runs the same operator, and another one of the same language, on their own connection.
        const sameOperator = await run(own, language, POISON[language], scope(OPERATOR, 'user-b'), B_SECRET);
        const otherOperator = await run(own, language, PROBE[language], scope(OTHER_OPERATOR, 'user-b'), B_SECRET);
        const again = await run(own, language, POISON[language], scope(OPERATOR, 'user-a'));

        // Then: B's runs had processes of their own, where A left nothing.
        expect(sameOperator.pid).not.to.equal(first.pid);
        expect(sameOperator.marker).to.equal(null);
        expect(otherOperator.pid).not.to.be.oneOf([first.pid, sameOperator.pid]);
        expect(otherOperator.marker).to.equal(null);
        // A's process served A again (reuse still works), and its hook saw A's requests only.
        expect(again.pid).to.equal(first.pid);
        expect(again.marker).to.equal('poisoned');
        expect(again.seen).to.include(A_SECRET);
        expect(again.seen).not.to.include(B_SECRET);
      });

      it('given user A\'s reuse action that poisoned its process, when user B runs the same action, then B gets another process; A\'s next run reuses A\'s', async () => {
        const own = runner();
        const act = async (actor: string, secret: string): Promise<Seen> => {
          const outcome = await own.runAction({ codeblock: { language, code: POISON[language] }, connection: { password: secret }, actionVariables: {}, context: {}, limits: bareOperatorRequest(null).limits, reuse: true, reuseScope: scope(OPERATOR, actor) });
          if (!outcome.ok) throw new Error(`action failed: ${JSON.stringify(outcome)}`);
          await own.cleanedUp();
          return outcome.result as Seen;
        };
        const first = await act('user-a', A_SECRET);
        const other = await act('user-b', B_SECRET);
        const again = await act('user-a', A_SECRET);
        expect(other.pid).not.to.equal(first.pid);
        expect(other.marker).to.equal(null);
        expect(again.pid).to.equal(first.pid);
        expect(again.seen).not.to.include(B_SECRET);
      });

      it('given a reuse run without a scope, when it runs twice, then each run has a fresh process', async () => {
        const own = runner();
        const first = await run(own, language, POISON[language], null);
        const second = await run(own, language, POISON[language], null);
        expect(second.pid).not.to.equal(first.pid);
        expect(second.marker).to.equal(null);
      });

      it('given an idle reuse process, when its scope is retired, then the process is gone and the next run of the scope gets a new one', async () => {
        const own = runner();
        const mine = scope(OPERATOR, 'user-a');
        const first = await run(own, language, POISON[language], mine);
        const kept = await run(own, language, POISON[language], mine);
        expect(kept.pid).to.equal(first.pid);
        expect(own.reuseScopes()).to.deep.equal([mine]);

        await own.retire((s) => s.actorLaui === 'user-a');

        expect(running(first.pid)).to.equal(false);
        expect(own.processIds()).not.to.include(first.pid);
        expect(own.reuseScopes()).to.deep.equal([]);
        const next = await run(own, language, POISON[language], mine);
        expect(next.pid).not.to.equal(first.pid);
        expect(next.marker).to.equal(null);
      });

      it('given a reuse run in progress, when its scope is retired, then its process is not kept after the run', async () => {
        const own = runner();
        const mine = scope(OPERATOR, 'user-a');
        const dir = mkdtempSync(join(scratch, `${language}-busy-`));
        const busy = run(own, language, WAITS[language], mine, A_SECRET, { dir });
        expect(await until(() => existsSync(join(dir, 'started')), 20_000)).to.equal(true);

        await own.retire((s) => s.itemLaui === OPERATOR);
        writeFileSync(join(dir, 'go'), '');
        const ended = await busy;

        expect(await until(() => !running(ended.pid))).to.equal(true);
        const next = await run(own, language, WAITS[language], mine, A_SECRET, { dir });
        expect(next.pid).not.to.equal(ended.pid);
      });

      it('given at most two idle reuse processes in all, when three scopes run one after the other, then the least recently used one is disposed of and the other two are reused', async () => {
        const own = runner({ maxIdleReusableTotal: 2 });
        const scopes = ['user-a', 'user-b', 'user-c'].map((user) => scope(OPERATOR, user));
        const firsts: Seen[] = [];
        for (const each of scopes) firsts.push(await run(own, language, PROBE[language], each));
        const [a, b, c] = firsts.map((seen) => seen.pid);

        expect(await until(() => !running(a ?? 0))).to.equal(true);
        expect(own.poolSize().used).to.equal(2);
        expect((await run(own, language, PROBE[language], scopes[1] ?? null)).pid).to.equal(b);
        expect((await run(own, language, PROBE[language], scopes[2] ?? null)).pid).to.equal(c);
        expect((await run(own, language, PROBE[language], scopes[0] ?? null)).pid).not.to.be.oneOf([a, b, c]);
      });
    });
  }
});
