import { expect } from 'chai';
import { diagnoseTask, type DiagnoseInput } from '../../query-side/task/diagnoseTask.ts';

const now = new Date('2024-06-10T12:00:00.000Z');
const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();
const ids = { operator: 'a'.repeat(24), connection: 'b'.repeat(24), workflow: 'c'.repeat(24), payload: 'd'.repeat(24), config: 'e'.repeat(24) };
const KEYS = [
  'next_run_in_future',
  'scheduler_not_running',
  'pre_action_failed',
  'state_cancelled',
  'user_cancellation_requested',
  'end_date_passed',
  'state_not_schedulable',
  'required_item_deleted',
  'stuck_in_connection_queue',
  'worker_not_running',
  'workflow_paused',
  'schedule_invalid',
  'waiting_for_worker_slot',
  'backfill_running',
];

const input = (task: Record<string, unknown>, overrides: Partial<DiagnoseInput> = {}): DiagnoseInput => ({
  task: { item_type: 'task', frequency: '0 0 * * *', start_date: '2024-06-01T00:00:00Z', end_date: '2024-12-31T00:00:00Z', state: 'scheduled', operator_laui: ids.operator, connection_laui: ids.connection, parent_laui: ids.workflow, ...task },
  now,
  cron: { status: 'RUNNING', alive: true, latestHeartbeat: new Date(ago(1)), intervalSeconds: 5 },
  items: new Map([
    [ids.operator, { item_type: 'operator.javascript', deleted: false }],
    [ids.connection, { item_type: 'connection', deleted: false }],
    [ids.workflow, { item_type: 'folder.workflow', deleted: false }],
  ]),
  staleHeartbeatSeconds: 60,
  taskHeartbeat: null,
  workers: { running: true, broker: 'in-process bus' },
  ...overrides,
});
const triggered = (result: ReturnType<typeof diagnoseTask>) => Object.keys(result).filter((key) => result[key]?.triggered);

describe('task diagnose checks (spec 4.2)', () => {
  it('given a healthy scheduled task, when diagnosed, then all fourteen checks are present and none triggered', () => {
    const result = diagnoseTask(input({ next_run_date: ago(10) }));
    expect(Object.keys(result)).to.deep.equal(KEYS);
    expect(triggered(result)).to.deep.equal([]);
    expect(result.scheduler_not_running).to.include({ severity: 'blocking', title: 'Scheduler not running' });
  });

  it('given each trigger, when diagnosed, then exactly its check fires with the spec severity', () => {
    const cases: Array<[string, Record<string, unknown>, Partial<DiagnoseInput>, string]> = [
      ['next_run_in_future', { next_run_date: '2024-06-11T00:00:00Z' }, {}, 'info'],
      ['scheduler_not_running', {}, { cron: { status: 'STOPPED', alive: false, latestHeartbeat: null, intervalSeconds: 5 } }, 'blocking'],
      ['pre_action_failed', { actions_status: { pre_actions: [{ name: 'gate.action', state: 'failed' }], running_actions: [], post_actions: [] } }, {}, 'blocking'],
      ['user_cancellation_requested', { user_set_state: 'cancel' }, {}, 'blocking'],
      ['end_date_passed', { end_date: ago(3600) }, {}, 'blocking'],
      ['required_item_deleted', { payload_laui: ids.payload }, {}, 'blocking'],
    ];
    for (const [key, task, overrides, severity] of cases) {
      const result = diagnoseTask(input(task, overrides));
      expect(triggered(result), key).to.deep.equal([key]);
      expect(result[key]?.severity).to.equal(severity);
    }
  });

  it('given a task under a PAUSE workflow, when diagnosed, then workflow_paused blocks and nothing else fires', () => {
    const result = diagnoseTask(input({ next_run_date: ago(10) }, { workflowState: 'PAUSE' }));
    expect(triggered(result)).to.deep.equal(['workflow_paused']);
    expect(result.workflow_paused).to.include({ severity: 'blocking', title: 'Workflow paused' });
    expect(triggered(diagnoseTask(input({ next_run_date: ago(10) }, { workflowState: 'ACTIVE' })))).to.deep.equal([]);
  });

  it('given a task saved with a schedule that cannot run, when diagnosed, then schedule_invalid blocks with the 422 a run of it gets (issue 33)', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ frequency: '61 * * * *' }, 'invalid cron expression: 61 * * * *'],
      [{ frequency: 'every 5 minutes' }, 'invalid cron expression: every 5 minutes'],
      [{ frequency: '0 0 * * * *' }, 'invalid cron expression: 0 0 * * * *'],
      [{ start_date: null, end_date: null }, 'start_date and end_date required for scheduled tasks'],
      [{ end_date: '2024-05-01T00:00:00Z' }, 'end_date must be greater than or equal to start_date'],
    ];
    for (const [fields, detail] of cases) {
      const result = diagnoseTask(input({ next_run_date: ago(10), ...fields }));
      expect(triggered(result), detail).to.include('schedule_invalid');
      expect(result.schedule_invalid).to.include({ severity: 'blocking', title: 'Schedule invalid' });
      expect(result.schedule_invalid?.details.startsWith(`${detail}:`), result.schedule_invalid?.details).to.equal(true);
    }
    expect(triggered(diagnoseTask(input({ frequency: 'ADHOC', start_date: null, end_date: null })))).not.to.include('schedule_invalid');
  });

  it('given a cancelled task, when diagnosed, then state_cancelled and state_not_schedulable fire', () => {
    const result = diagnoseTask(input({ state: 'cancelled' }));
    expect(triggered(result)).to.deep.equal(['state_cancelled', 'state_not_schedulable']);
    expect(result.state_not_schedulable?.severity).to.equal('warning');
  });

  it('given a running task whose heartbeat is stale, when diagnosed, then it is stuck; a fresh in-memory beat clears it', () => {
    const task = { state: 'running', latest_heartbeat: ago(120), task_instance_start_date: ago(120) };
    expect(triggered(diagnoseTask(input(task)))).to.include('stuck_in_connection_queue');
    expect(triggered(diagnoseTask(input(task, { taskHeartbeat: new Date(ago(5)) })))).not.to.include('stuck_in_connection_queue');
  });

  it('given a task waiting for a worker, when no worker consumes or the pick-up is overdue, then the worker check warns naming the broker', () => {
    const waiting = { state: 'queued_in_redis', last_system_updated_date: ago(5) };
    expect(triggered(diagnoseTask(input(waiting)))).not.to.include('worker_not_running');
    const none = diagnoseTask(input(waiting, { workers: { running: false, broker: 'in-process bus' } }));
    expect(none.worker_not_running).to.include({ triggered: true, severity: 'warning', title: 'Celery not running (worker broker: in-process bus)' });
    expect(triggered(diagnoseTask(input({ ...waiting, last_system_updated_date: ago(300) })))).to.include('worker_not_running');
  });

  it('given a run a worker holds without a free slot, when diagnosed long after its dispatch, then it is reported waiting with its position, not as a missing worker', () => {
    const waiting = { state: 'queued_in_redis', last_system_updated_date: ago(300) };
    const slotWait = { since: new Date(ago(290)), ahead: 7, slots: 8, running: 8, policy: 'fair' as const };
    const result = diagnoseTask(input(waiting, { slotWait }));
    expect(triggered(result)).to.deep.equal(['state_not_schedulable', 'waiting_for_worker_slot']);
    expect(result.waiting_for_worker_slot).to.include({ severity: 'info', title: 'Waiting for a worker slot' });
    expect(result.waiting_for_worker_slot?.details).to.match(/for 290 s .*; 7 run\(s\) ahead of it; 8 of 8 slots busy/);
    // Not held by a worker of this process: no position, and the overdue pick-up warns as before.
    const elsewhere = diagnoseTask(input(waiting));
    expect(elsewhere.waiting_for_worker_slot?.triggered).to.equal(false);
    expect(elsewhere.waiting_for_worker_slot?.details).to.match(/300 s ago/);
    expect(triggered(elsewhere)).to.include('worker_not_running');
    // A run that left the queue is not waiting, whatever a worker's pool said a moment ago.
    expect(diagnoseTask(input({ state: 'running', latest_heartbeat: ago(1) }, { slotWait })).waiting_for_worker_slot?.triggered).to.equal(false);
  });

  it('given a backfill of the task not completed, when diagnosed, then it is reported (info) with its counts', () => {
    const backfill = { backfill_id: 'b1', status: 'running' as const, total: 10, done: 3, failed: 1, running: 1, pending: 5 };
    const result = diagnoseTask(input({}, { backfill }));
    expect(result.backfill_running).to.include({ triggered: true, severity: 'info', title: 'Backfill running' });
    expect(result.backfill_running?.details).to.match(/^Backfill b1 \(running\): 3 of 10 runs done, 1 failed, 1 running, 5 not started/);
    expect(diagnoseTask(input({})).backfill_running?.triggered).to.equal(false);
  });

  it('given an ADHOC task and no cron, when diagnosed, then the scheduler is not needed', () => {
    const result = diagnoseTask(input({ frequency: 'ADHOC' }, { cron: { status: null, alive: false, latestHeartbeat: null, intervalSeconds: 5 } }));
    expect(result.scheduler_not_running?.triggered).to.equal(false);
  });

  it('given a deleted connection and attached config, when diagnosed, then the details name each', () => {
    const items = input({}).items as Map<string, { item_type: string; deleted: boolean } | null>;
    items.set(ids.connection, { item_type: 'connection', deleted: true });
    const result = diagnoseTask(input({ attached_config_lauis: [ids.config] }, { items }));
    expect(result.required_item_deleted?.details).to.equal(`connection item not found: ${ids.connection}; config item not found: ${ids.config}`);
  });
});
