import { expect } from 'chai';
import { bwrapArgs, decideSandbox } from './sandbox.ts';

describe('decideSandbox: how run processes are kept from the service\'s rights', () => {
  it('given a service running as root and nothing configured, when decided, then every run process drops to the default identity range', () => {
    expect(decideSandbox({ isRoot: true, setting: 'auto', runAs: null, bwrapUsable: false })).to.deep.equal({ kind: 'run-as', range: { uid: 64_000, gid: 64_000, count: 1000 } });
  });

  it('given WORKER_RUN_AS_* configured, when decided, then that identity is used, as root or not (a service given CAP_SETUID)', () => {
    const runAs = { uid: 1500, gid: 1500, count: 1 };
    expect(decideSandbox({ isRoot: true, setting: 'auto', runAs, bwrapUsable: false })).to.deep.equal({ kind: 'run-as', range: runAs });
    expect(decideSandbox({ isRoot: false, setting: 'auto', runAs, bwrapUsable: true })).to.deep.equal({ kind: 'run-as', range: runAs });
  });

  it('given a service not running as root and no identity, when decided, then code runs are refused with a message naming the ways out', () => {
    const decision = decideSandbox({ isRoot: false, setting: 'auto', runAs: null, bwrapUsable: false });
    expect(decision.kind).to.equal('refused');
    expect(decision.kind === 'refused' ? decision.message : '').to.include('WORKER_SANDBOX=none').and.include('WORKER_RUN_AS_UID').and.include('bubblewrap');
  });

  it('given a service not running as root and bubblewrap usable, when decided, then runs go into bubblewrap sandboxes; as root the uid switch stays', () => {
    expect(decideSandbox({ isRoot: false, setting: 'auto', runAs: null, bwrapUsable: true })).to.deep.equal({ kind: 'bwrap' });
    expect(decideSandbox({ isRoot: true, setting: 'auto', runAs: null, bwrapUsable: true }).kind).to.equal('run-as');
  });

  it('given WORKER_SANDBOX=bwrap, when decided, then bubblewrap is used when usable and otherwise refused naming why; as root it is refused (code would keep uid 0)', () => {
    expect(decideSandbox({ isRoot: false, setting: 'bwrap', runAs: null, bwrapUsable: true })).to.deep.equal({ kind: 'bwrap' });
    const unusable = decideSandbox({ isRoot: false, setting: 'bwrap', runAs: null, bwrapUsable: false });
    expect(unusable.kind === 'refused' ? unusable.message : '').to.include('bubblewrap is not usable');
    const root = decideSandbox({ isRoot: true, setting: 'bwrap', runAs: null, bwrapUsable: true });
    expect(root.kind === 'refused' ? root.message : '').to.include('WORKER_SANDBOX=auto');
  });

  it('given WORKER_SANDBOX=none, when decided, then code runs with the service\'s rights and a warning for every start, root or not', () => {
    for (const isRoot of [true, false]) {
      const decision = decideSandbox({ isRoot, setting: 'none', runAs: null, bwrapUsable: false });
      expect(decision.kind).to.equal('none');
      expect(decision.kind === 'none' ? decision.warning : '').to.include('rights of the service');
    }
  });
});

describe('bwrapArgs: what a bubblewrap sandbox shows of the host', () => {
  it('given hidden, read-only and writable paths, when built, then / is read-only, the hidden trees are empty tmpfs mounts shown back only where asked, and a hidden tree inside a writable root stays hidden', () => {
    const args = bwrapArgs({ hidden: ['/srv/app', '/tmp/x/data'], readOnly: ['/srv/app/runtime'], writable: ['/tmp/x'] });
    expect(args).to.include.members(['--unshare-user', '--unshare-pid', '--die-with-parent']);
    expect(args).not.to.include('--unshare-net');
    const pairs = args.join(' ');
    expect(pairs).to.include('--ro-bind / /');
    expect(pairs).to.include('--tmpfs /srv/app --tmpfs /tmp/x/data --ro-bind /srv/app/runtime /srv/app/runtime --bind /tmp/x /tmp/x --tmpfs /tmp/x/data');
  });

  it('given unshareNet (WORKER_NETWORK=none), when built, then the sandbox gets a network namespace of its own', () => {
    expect(bwrapArgs({ hidden: [], readOnly: [], writable: [], unshareNet: true })).to.include('--unshare-net');
  });
});
