import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { domainFile, measureHops } from './runHops.ts';

/**
 * Issue 34's hop list. The ceiling is today's count (64 domain files): a change that makes a manual
 * run cross more domain files fails here; it comes down as the pipeline is cut, to the issue's 8.
 */
const CEILING = 64;

describe('npm run hops (the domain files of a manual run)', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hops-spec-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('given script URLs, when classified, then only non-spec files of the domain folders count, shared/http and ops/ do not', () => {
    const root = new URL('..', import.meta.url).href;
    expect(domainFile(`${root}command-side/task/runTask.ts`)).to.equal('command-side/task/runTask.ts');
    expect(domainFile(`${root}shared/task/runLifecycle.ts?tsx`)).to.equal('shared/task/runLifecycle.ts');
    expect(domainFile(`${root}shared/http/AppState.ts`)).to.equal(null);
    expect(domainFile(`${root}ops/roots/apiRoot.ts`)).to.equal(null);
    expect(domainFile(`${root}command-side/task/judgeLease.unit.spec.ts`)).to.equal(null);
    expect(domainFile('node:internal/timers')).to.equal(null);
  });

  it(`given a warmed-up no-op task, when it is run once more by hand, then its domain files are listed, the request's and the worker's among them, at most ${CEILING}`, async () => {
    const hops = await measureHops(dir);
    expect(hops.files).to.include.members(['command-side/task/runTask.ts', 'command-side/task/executeTask.ts', 'shared/task/runLifecycle.ts']);
    expect(hops.count).to.equal(hops.files.length);
    expect(new Set(hops.files).size).to.equal(hops.files.length);
    expect(hops.count, JSON.stringify(hops)).to.be.at.most(CEILING);
  });
});
