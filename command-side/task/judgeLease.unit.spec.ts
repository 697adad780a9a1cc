import { expect } from 'chai';
import { judgeLease, NEVER_DELIVERED, STALE_HEARTBEAT, type LeaseFacts } from './judgeLease.ts';

const now = new Date('2024-06-10T12:00:00.000Z');
const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000);
const facts = (overrides: Partial<LeaseFacts> & { task?: LeaseFacts['task'] } = {}): LeaseFacts => ({
  lease: { sessionId: 's1', leasedAt: ago(600).toISOString() },
  task: { state: 'queued_in_redis', session_id: 's1' },
  beat: null,
  busHolds: true,
  watchingSince: ago(3600),
  now,
  staleSeconds: 60,
  ...overrides,
});

describe('the reaper rule (judgeLease)', () => {
  it('given a run waiting for a worker slot for ten minutes, when judged, then it is kept whether the bus says it holds it or cannot say', () => {
    expect(judgeLease(facts())).to.deep.equal({ kind: 'keep' });
    expect(judgeLease(facts({ busHolds: null }))).to.deep.equal({ kind: 'keep' });
  });

  it('given a started run, when its newest beat is older than the stale window, then it is reaped; a fresh beat keeps it', () => {
    const running = { state: 'running', session_id: 's1', task_instance_start_date: ago(300).toISOString(), latest_heartbeat: ago(300).toISOString() };
    expect(judgeLease(facts({ task: running, beat: ago(61) }))).to.deep.equal({ kind: 'reap', error: STALE_HEARTBEAT });
    expect(judgeLease(facts({ task: running, beat: ago(5) }))).to.deep.equal({ kind: 'keep' });
    // Picked up (a beat since the lease) while the read model still says queued_in_redis: started all the same.
    expect(judgeLease(facts({ beat: ago(61) }))).to.deep.equal({ kind: 'reap', error: STALE_HEARTBEAT });
  });

  it('given a started run without a beat known here, when this process started within the window, then it is kept; later it is reaped', () => {
    const running = { state: 'running', session_id: 's1', task_instance_start_date: ago(300).toISOString(), latest_heartbeat: ago(300).toISOString() };
    expect(judgeLease(facts({ task: running, watchingSince: ago(10) }))).to.deep.equal({ kind: 'keep' });
    expect(judgeLease(facts({ task: running, watchingSince: ago(3600) }))).to.deep.equal({ kind: 'reap', error: STALE_HEARTBEAT });
  });

  it('given a beat older than the lease (an earlier run of the task), when judged, then it does not make the waiting run stale', () => {
    expect(judgeLease(facts({ beat: ago(700) }))).to.deep.equal({ kind: 'keep' });
  });

  it('given a run whose message the in-process bus no longer holds, when the lease is older than the window, then it is reaped as never delivered; younger, kept', () => {
    expect(judgeLease(facts({ busHolds: false }))).to.deep.equal({ kind: 'reap', error: NEVER_DELIVERED });
    expect(judgeLease(facts({ busHolds: false, lease: { sessionId: 's1', leasedAt: ago(10).toISOString() } }))).to.deep.equal({ kind: 'keep' });
  });

  it('given a lease its task no longer runs under (gone, another session, ended), when older than the window, then only the slot is released', () => {
    for (const task of [null, { state: 'queued_in_redis', session_id: 's2' }, { state: 'success', session_id: 's1' }]) {
      expect(judgeLease(facts({ task })), JSON.stringify(task)).to.deep.equal({ kind: 'release' });
      expect(judgeLease(facts({ task, lease: { sessionId: 's1', leasedAt: ago(10).toISOString() } }))).to.deep.equal({ kind: 'keep' });
    }
  });
});
