import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { ItemEvent } from '../../shared/domain-events/itemEvents.ts';
import { cronStatusDecider } from './changeCronStatus.ts';
import { CRON_ALREADY_RUNNING, type CronCommand, type CronContext, type FolderMetadata } from './cronLifecycle.ts';

const PROJECT = '65a0000000000000000000f1';
const REVISION = '65a0000000000000000000f9';
const now = new Date('2026-01-01T12:00:00.000Z');
const NOW = now.toISOString();
const ago = (seconds: number): string => new Date(now.getTime() - seconds * 1000).toISOString();
/** Interval 5 s: a heartbeat older than 15 s is dead. */
const context = (liveBeatSecondsAgo: number | null = null): CronContext => ({
  now,
  liveBeat: liveBeatSecondsAgo === null ? null : new Date(now.getTime() - liveBeatSecondsAgo * 1000),
  intervalSeconds: 5,
});
const command = (cron: CronCommand, liveBeatSecondsAgo: number | null = null) => ({ cron, context: context(liveBeatSecondsAgo), revisionLaui: REVISION });

const created = (folder_metadata: FolderMetadata | undefined, itemType = 'folder.project'): ItemEvent => ({
  type: 'ItemCreated',
  data: {
    laui: PROJECT,
    item_type: itemType,
    name: 'p',
    parent_laui: null,
    parent_type: null,
    link_laui: null,
    is_root: false,
    fields: folder_metadata === undefined ? {} : { folder_metadata },
    access: { owners: {}, editors: {}, viewers: {} },
    version: 3,
    revision_laui: PROJECT,
  },
});
/** The named event of a status change: ItemUpdated's record (unversioned: folder_metadata is a runtime field) with from and to. */
const named = (type: string, from: string | null, to: string, folder_metadata: FolderMetadata): ItemEvent =>
  ({ type, data: { from, to, changes: { folder_metadata }, version: 3, revision_laui: null } }) as ItemEvent;

const given = deciderSpecification(cronStatusDecider);
const STARTED_NOW = { cron_status: 'STARTED', latest_heartbeat: NOW, start_date: NOW, stop_date: null, error: null };

describe('project cron status decider (spec 3.3 on the project stream)', () => {
  it('given no project, a deleted one or an item that is not a project, when any cron command comes, then 404 Item not found', () => {
    given().when(command({ kind: 'start' })).thenFails(404, 'Item not found');
    given(created({}), { type: 'ItemSoftDeleted', data: { at: NOW } }).when(command({ kind: 'start' })).thenFails(404, 'Item not found');
    given(created({}, 'folder.workflow')).when(command({ kind: 'stop' })).thenFails(404, 'Item not found');
    given(created({}, 'task')).when(command({ kind: 'loop_began' })).thenFails(404, 'Item not found');
  });

  it('given a project without cron (no folder_metadata), when started, then CronStarted from null with the whole new folder_metadata', () => {
    given(created(undefined)).when(command({ kind: 'start' })).then([named('CronStarted', null, 'STARTED', STARTED_NOW)]);
  });

  it('given a stopped project with other folder_metadata, when started, then the decided fields are merged into the current ones', () => {
    const current = { state: 'ACTIVE', cron_status: 'STOPPED', stop_date: ago(600), error: 'old' };
    given(created(current)).when(command({ kind: 'start' })).then([named('CronStarted', 'STOPPED', 'STARTED', { ...current, ...STARTED_NOW })]);
  });

  it('given a running cron whose heartbeat is live (ephemeral or persisted), when started, then 409 already running', () => {
    given(created({ cron_status: 'RUNNING', latest_heartbeat: ago(600) })).when(command({ kind: 'start' }, 10)).thenFails(409, CRON_ALREADY_RUNNING);
    given(created({ cron_status: 'STARTED', latest_heartbeat: ago(2) })).when(command({ kind: 'start' })).thenFails(409, CRON_ALREADY_RUNNING);
  });

  it('given a running cron whose heartbeat is dead, when started, then the START takes over (CronStarted from RUNNING)', () => {
    const current = { cron_status: 'RUNNING', latest_heartbeat: ago(60), start_date: ago(3600) };
    given(created(current)).when(command({ kind: 'start' }, 60)).then([named('CronStarted', 'RUNNING', 'STARTED', STARTED_NOW)]);
  });

  it('given a live running cron, when stopped, then CronStopRequested (STOP, the loop writes STOPPED)', () => {
    const current = { cron_status: 'RUNNING', latest_heartbeat: ago(1) };
    given(created(current)).when(command({ kind: 'stop' }, 1)).then([named('CronStopRequested', 'RUNNING', 'STOP', { ...current, cron_status: 'STOP' })]);
  });

  it('given a dead running cron, a dead STOP or an ERROR, when stopped, then CronStopped at once with its stop_date', () => {
    for (const status of ['STARTED', 'RUNNING', 'STOP', 'ERROR']) {
      const current = { cron_status: status, latest_heartbeat: ago(60) };
      given(created(current))
        .when(command({ kind: 'stop' }))
        .then([named('CronStopped', status, 'STOPPED', { ...current, cron_status: 'STOPPED', stop_date: NOW })]);
    }
  });

  it('given no cron, a stopped one or a live STOP, when stopped, then nothing is recorded (stopping is idempotent)', () => {
    given(created(undefined)).when(command({ kind: 'stop' })).then([]);
    given(created({ cron_status: 'STOPPED' })).when(command({ kind: 'stop' })).then([]);
    given(created({ cron_status: 'STOP', latest_heartbeat: ago(1) })).when(command({ kind: 'stop' })).then([]);
  });

  it('given STARTED, when the loop begins, then CronLoopStarted (RUNNING, heartbeat now); from any other status nothing', () => {
    given(created(STARTED_NOW)).when(command({ kind: 'loop_began' })).then([named('CronLoopStarted', 'STARTED', 'RUNNING', { ...STARTED_NOW, cron_status: 'RUNNING' })]);
    for (const status of ['RUNNING', 'STOP', 'STOPPED', 'ERROR']) given(created({ cron_status: status })).when(command({ kind: 'loop_began' })).then([]);
  });

  it('given STOP, when the loop ends, then CronStopped with heartbeat and stop_date now; from any other status nothing', () => {
    given(created({ cron_status: 'STOP' }))
      .when(command({ kind: 'loop_ended' }))
      .then([named('CronStopped', 'STOP', 'STOPPED', { cron_status: 'STOPPED', latest_heartbeat: NOW, stop_date: NOW })]);
    for (const status of ['STARTED', 'RUNNING', 'STOPPED', 'ERROR']) given(created({ cron_status: status })).when(command({ kind: 'loop_ended' })).then([]);
  });

  it('given STARTED or RUNNING, when the loop fails, then CronFailed with the error; from any other status nothing', () => {
    for (const status of ['STARTED', 'RUNNING']) {
      given(created({ cron_status: status }))
        .when(command({ kind: 'loop_failed', error: 'db gone' }))
        .then([named('CronFailed', status, 'ERROR', { cron_status: 'ERROR', latest_heartbeat: NOW, stop_date: NOW, error: 'db gone' })]);
    }
    for (const status of ['STOP', 'STOPPED', 'ERROR']) given(created({ cron_status: status })).when(command({ kind: 'loop_failed', error: 'x' })).then([]);
  });

  it('given a decided status change, when folded, then the project\'s folder_metadata is the new one and its version is kept', () => {
    const project = cronStatusDecider.evolve(cronStatusDecider.initialState(), created({ state: 'ACTIVE' }));
    const state = cronStatusDecider.decide(command({ kind: 'start' }), project).reduce(cronStatusDecider.evolve, project);
    expect(state).to.deep.include({ status: 'live', version: 3, fields: { folder_metadata: { state: 'ACTIVE', ...STARTED_NOW } } });
  });
});
