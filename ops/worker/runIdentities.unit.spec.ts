import { expect } from 'chai';
import { IdentityHolders } from './identityHandle.ts';
import type { ProcessEvents, ProcessHandle } from './processHandle.ts';
import { DEFAULT_RUN_AS, RunIdentities } from './runIdentities.ts';
import type { RuntimeProcess } from './RuntimeProcess.ts';
import type { RunAs } from './sandbox.ts';

/** An OS process that only ends when killed (its exit reported on the next turn). */
class FakeOsProcess implements ProcessHandle {
  readonly pid = undefined;
  killed = false;
  constructor(
    readonly runAs: RunAs,
    private readonly events: ProcessEvents,
  ) {}
  write(): void {}
  signal(): void {}
  close(): void {}
  setRef(): void {}
  kill(): void {
    if (this.killed) return;
    this.killed = true;
    setImmediate(() => this.events.exit(null, 'SIGKILL'));
  }
}

/**
 * Runtime processes started through IdentityHolders as ProcessStarter starts them, on fake OS
 * processes: `live` holds the uids of the OS processes started and not yet ended, and a start with
 * a uid already live fails the test.
 */
function fakeRunner(range: { uid: number; gid: number; count: number }) {
  const holders = new IdentityHolders(new RunIdentities(range));
  const live = new Set<number>();
  const started: FakeOsProcess[] = [];
  const start = (): RuntimeProcess =>
    holders.start({ language: 'python', memoryMb: 64, dir: '/nonexistent/coderun', memoryHeadroomMb: 0 }, (runAs, events) => {
      expect(live.has(runAs.uid), `uid ${runAs.uid} started while a live process has it`).to.equal(false);
      live.add(runAs.uid);
      const os = new FakeOsProcess(runAs, {
        ...events,
        exit: (code, signal) => {
          live.delete(runAs.uid);
          events.exit(code, signal);
        },
      });
      started.push(os);
      return os;
    });
  return { holders, live, started, start };
}

describe('RunIdentities: one identity per live process, never shared', () => {
  it('given a range, when identities are taken, then they are distinct until released, and a released one comes back last', () => {
    const identities = new RunIdentities({ uid: 100, gid: 200, count: 3 });
    const [a, b, c] = [identities.take(), identities.take(), identities.take()];
    expect([a, b, c]).to.deep.equal([{ uid: 100, gid: 200 }, { uid: 101, gid: 201 }, { uid: 102, gid: 202 }]);
    identities.release(b!);
    identities.release(a!);
    expect(identities.take()).to.deep.equal({ uid: 101, gid: 201 });
    expect(identities.take()).to.deep.equal({ uid: 100, gid: 200 });
  });

  it('given a range of 3 held by three processes, when a fourth asks, then it gets none and waits in line until one is released, and then gets that one', () => {
    const identities = new RunIdentities({ uid: 100, gid: 100, count: 3 });
    const held = [identities.take(), identities.take(), identities.take()];
    expect(identities.take(), 'no identity is shared').to.equal(null);
    const given: RunAs[] = [];
    identities.wait((identity) => given.push(identity));
    expect(given).to.deep.equal([]);
    expect(identities.waiting).to.deep.equal({ all: 1, urgent: 0 });

    identities.release(held[1]!);
    expect(given).to.deep.equal([{ uid: 101, gid: 101 }]);
    expect(identities.held, 'the released identity went straight to the one in line').to.equal(3);
    expect(identities.take()).to.equal(null);
  });

  it('given a range of one, when two processes ask, then they get it one at a time', () => {
    const identities = new RunIdentities({ uid: 100, gid: 100, count: 1 });
    const first = identities.take();
    expect(first).to.deep.equal({ uid: 100, gid: 100 });
    expect(identities.take()).to.equal(null);
    let second: RunAs | null = null;
    identities.wait((identity) => (second = identity));
    expect(second).to.equal(null);
    identities.release(first!);
    expect(second).to.deep.equal({ uid: 100, gid: 100 });
  });

  it('given processes started ahead of demand in line, when a run waits on a later one, then the released identity goes to the run\'s first; a cancelled one gets none', () => {
    const identities = new RunIdentities({ uid: 100, gid: 100, count: 1 });
    const held = identities.take()!;
    const order: string[] = [];
    identities.wait(() => order.push('pool'));
    const gone = identities.wait(() => order.push('gone'));
    identities.wait(() => order.push('run')).hurry();
    gone.cancel();
    expect(identities.waiting).to.deep.equal({ all: 2, urgent: 1 });
    identities.release(held);
    expect(order).to.deep.equal(['run']);
    identities.release(held);
    expect(order).to.deep.equal(['run', 'pool']);
  });

  it('given an identity released twice, when taken again, then it is handed out once', () => {
    const identities = new RunIdentities({ uid: 100, gid: 100, count: 1 });
    const held = identities.take()!;
    identities.release(held);
    identities.release(held);
    expect(identities.take()).to.deep.equal({ uid: 100, gid: 100 });
    expect(identities.take()).to.equal(null);
  });

  it('given the default range, when counted, then it stays below 65536 (the uids a user-namespaced container maps by default)', () => {
    expect(DEFAULT_RUN_AS.uid + DEFAULT_RUN_AS.count).to.be.at.most(65_536);
  });
});

describe('IdentityHolders: runtime processes wait for an identity of their own', () => {
  it('given a range of 3, when four processes are started, then the fourth starts only once one of the three ended, with its uid', async () => {
    const runner = fakeRunner({ uid: 100, gid: 100, count: 3 });
    const procs = [runner.start(), runner.start(), runner.start(), runner.start()];
    expect(runner.started.map((os) => os.runAs.uid)).to.deep.equal([100, 101, 102]);
    const fourth = procs[3]!;
    expect(fourth.runAs, 'no identity yet').to.equal(undefined);
    const arrival = runner.holders.arrival(fourth);
    expect(arrival, 'the fourth waits in line').to.not.equal(null);
    expect(runner.holders.arrival(procs[0]!), 'the first three need no wait').to.equal(null);

    procs[1]!.kill('killed');
    expect(await arrival).to.equal(true);
    expect(runner.started.map((os) => os.runAs.uid)).to.deep.equal([100, 101, 102, 101]);
    expect(fourth.runAs).to.deep.equal({ uid: 101, gid: 101 });
    expect([...runner.live].sort()).to.deep.equal([100, 101, 102]);
    for (const proc of procs) proc.kill('killed');
    await Promise.all(procs.map((proc) => proc.exited));
    expect(runner.live.size).to.equal(0);
  });

  it('given a process in line, when it is killed, then it ends without starting and the next one in line gets the identity', async () => {
    const runner = fakeRunner({ uid: 100, gid: 100, count: 1 });
    const [holder, killed, next] = [runner.start(), runner.start(), runner.start()];
    killed.kill('killed');
    await killed.exited;
    expect(await killed.ready.then(() => 'ready', () => 'failed')).to.equal('failed');
    holder.kill('killed');
    expect(await runner.holders.arrival(next)).to.equal(true);
    expect(runner.started).to.have.length(2);
    next.kill('killed');
    await next.exited;
  });

  it('given the only identity held by an idle process, when a run takes a process in line, then the idle one is killed for it; one started ahead of demand kills nobody', async () => {
    const runner = fakeRunner({ uid: 100, gid: 100, count: 1 });
    const idle = runner.start();
    const ahead = runner.start();
    expect(runner.started[0]!.killed, 'a process in line for the pool leaves the idle one alone').to.equal(false);

    ahead.setBusy(true);
    expect(runner.started[0]!.killed, 'a run waits on it: the idle one goes').to.equal(true);
    expect(await runner.holders.arrival(ahead)).to.equal(true);
    expect(idle.alive).to.equal(false);
    expect(runner.started.map((os) => os.runAs.uid)).to.deep.equal([100, 100]);
    ahead.kill('killed');
    await ahead.exited;
  });

  it('given the only identity held by a busy process, when a run waits, then the busy one is not killed, and once it goes idle it is', async () => {
    const runner = fakeRunner({ uid: 100, gid: 100, count: 1 });
    const busy = runner.start();
    busy.setBusy(true);
    const waiting = runner.start();
    waiting.setBusy(true);
    expect(runner.started[0]!.killed).to.equal(false);
    busy.setBusy(false);
    expect(runner.started[0]!.killed).to.equal(true);
    expect(await runner.holders.arrival(waiting)).to.equal(true);
    waiting.kill('killed');
    await waiting.exited;
  });
});
