import { expect } from 'chai';
import type { RecordedEvent } from './EventStore.ts';
import { upcast } from './upcast.ts';

const recorded = (type: string, data: Record<string, unknown>, version?: number): RecordedEvent => ({
  id: 'e',
  streamId: 'item-65a000000000000000000001',
  revision: 1,
  position: 2n,
  type,
  data,
  metadata: { user_laui: null, correlation_id: 'c', causation_id: null, at: '2026-01-01T00:00:00.000Z', ...(version ? { version } : {}) },
  recordedAt: '2026-01-01T00:00:00.000Z',
});
const v1Update = (changes: Record<string, unknown>, revision_laui: string | null = null) => recorded('ItemUpdated', { changes, version: 1, revision_laui });

describe('upcasting on read (the log written before named task events)', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['a run queued', { state: 'queued_for_connection', user_set_state: null }, 'TaskQueued'],
    ['a dispatch', { state: 'queued_in_redis', session_id: 's' }, 'TaskDispatched'],
    ['a pick-up', { state: 'running', iteration: 1 }, 'TaskStarted'],
    ['a success', { state: 'success', retry_number: 0 }, 'TaskSucceeded'],
    ['an error', { state: 'error', retry_number: 1 }, 'TaskErrored'],
    ['a timeout', { state: 'timeout', retry_number: 1 }, 'TaskTimedOut'],
    ['a cancellation', { state: 'cancelled', duration: 3 }, 'TaskCancelled'],
    ['an invalid operator', { state: 'fail', duration: 3 }, 'TaskFailed'],
    ['a reset', { state: 'scheduled', last_run_output: {}, user_set_state: null }, 'TaskReset'],
    ['a released claim to scheduled', { state: 'scheduled' }, 'TaskClaimReleased'],
    ['a released claim back to error', { state: 'error' }, 'TaskClaimReleased'],
    ['a cancellation request', { user_set_state: 'cancel' }, 'TaskCancellationRequested'],
    ['a skipping pre-action', { actions_status: { pre_actions: [{ state: 'failed' }] } }, 'TaskSkipped'],
  ];
  for (const [what, changes, type] of cases) {
    it(`given a version-1 ItemUpdated of ${what}, when read, then it is a ${type} (version 1) with the same change record`, () => {
      const event = upcast(v1Update(changes));
      expect(event.type).to.equal(type);
      expect(event.metadata.version).to.equal(1);
      expect(event.data).to.deep.include({ changes, version: 1, revision_laui: null, from: null });
    });
  }

  it('given an old dispatch, when read, then TaskDispatched has its session id and no execution id (the release did not record one)', () => {
    expect(upcast(v1Update({ state: 'queued_in_redis', session_id: 's' })).data).to.deep.include({ session_id: 's', execution_id: null, to: 'queued_in_redis' });
  });

  it('given a cron status change, when read, then it is the named cron event; a versioned folder edit is not', () => {
    const started = upcast(v1Update({ folder_metadata: { cron_status: 'STARTED' } }));
    expect(started.type).to.equal('CronStarted');
    expect(started.data).to.deep.include({ to: 'STARTED', from: null });
    expect(upcast(v1Update({ folder_metadata: { cron_status: 'STOPPED' } })).type).to.equal('CronStopped');
    expect(upcast(v1Update({ folder_metadata: { cron_status: 'STOPPED' } }, 'rev')).type).to.equal('ItemUpdated');
  });

  it('given a field edit or a passing pre-action record, when read, then it is ItemUpdated version 2 with the same data', () => {
    for (const changes of [{ description: 'd' }, { actions_status: { pre_actions: [{ state: 'success' }] } }, { logical_date: 'x', next_run_date: 'y' }]) {
      const event = upcast(v1Update(changes));
      expect(event.type).to.equal('ItemUpdated');
      expect(event.metadata.version).to.equal(2);
      expect(event.data).to.deep.equal({ changes, version: 1, revision_laui: null });
    }
  });

  it('given events written by this release, when read, then they are returned as they are (the same object)', () => {
    const current = recorded('ItemUpdated', { changes: { state: 'running' }, version: 1, revision_laui: null }, 2);
    expect(upcast(current)).to.equal(current);
    const other = recorded('UserCreated', { username: 'u' });
    expect(upcast(other)).to.equal(other);
  });

  it('given a version-1 ItemUpdated whose data is not an object (a damaged row), when read, then it is returned as it is, never a crash', () => {
    for (const data of [undefined, null, 'text', [1, 2]]) {
      const event = recorded('ItemUpdated', data as unknown as Record<string, unknown>);
      expect(upcast(event)).to.equal(event);
    }
  });
});
