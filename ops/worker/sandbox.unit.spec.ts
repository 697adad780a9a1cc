import { expect } from 'chai';
import { decideSandbox, DEFAULT_RUN_AS, RunIdentities } from './sandbox.ts';

describe('decideSandbox: how run processes are kept from the service\'s rights', () => {
  it('given a service running as root and nothing configured, when decided, then every run process drops to the default identity range', () => {
    expect(decideSandbox({ isRoot: true, setting: 'auto', runAs: null })).to.deep.equal({ kind: 'run-as', range: { uid: 64_000, gid: 64_000, count: 1000 } });
  });

  it('given WORKER_RUN_AS_* configured, when decided, then that identity is used, as root or not (a service given CAP_SETUID)', () => {
    const runAs = { uid: 1500, gid: 1500, count: 1 };
    expect(decideSandbox({ isRoot: true, setting: 'auto', runAs })).to.deep.equal({ kind: 'run-as', range: runAs });
    expect(decideSandbox({ isRoot: false, setting: 'auto', runAs })).to.deep.equal({ kind: 'run-as', range: runAs });
  });

  it('given a service not running as root and no identity, when decided, then code runs are refused with a message naming the ways out', () => {
    const decision = decideSandbox({ isRoot: false, setting: 'auto', runAs: null });
    expect(decision.kind).to.equal('refused');
    expect(decision.kind === 'refused' ? decision.message : '').to.include('WORKER_SANDBOX=none').and.include('WORKER_RUN_AS_UID');
  });

  it('given WORKER_SANDBOX=none, when decided, then code runs with the service\'s rights and a warning for every start, root or not', () => {
    for (const isRoot of [true, false]) {
      const decision = decideSandbox({ isRoot, setting: 'none', runAs: null });
      expect(decision.kind).to.equal('none');
      expect(decision.kind === 'none' ? decision.warning : '').to.include('rights of the service');
    }
  });
});

describe('RunIdentities: one identity per live process', () => {
  it('given a range, when identities are taken, then they are distinct until released, and a released one comes back last', () => {
    const identities = new RunIdentities({ uid: 100, gid: 200, count: 3 });
    const [a, b, c] = [identities.take(), identities.take(), identities.take()];
    expect([a, b, c]).to.deep.equal([{ uid: 100, gid: 200 }, { uid: 101, gid: 201 }, { uid: 102, gid: 202 }]);
    identities.release(b);
    identities.release(a);
    expect(identities.take()).to.deep.equal({ uid: 101, gid: 201 });
    expect(identities.take()).to.deep.equal({ uid: 100, gid: 200 });
  });

  it('given a range used up, when one more is taken, then the first identity is shared rather than none', () => {
    const identities = new RunIdentities({ uid: 100, gid: 100, count: 1 });
    expect(identities.take()).to.deep.equal({ uid: 100, gid: 100 });
    expect(identities.take()).to.deep.equal({ uid: 100, gid: 100 });
  });

  it('given the default range, when counted, then it stays below 65536 (the uids a user-namespaced container maps by default)', () => {
    expect(DEFAULT_RUN_AS.uid + DEFAULT_RUN_AS.count).to.be.at.most(65_536);
  });
});
