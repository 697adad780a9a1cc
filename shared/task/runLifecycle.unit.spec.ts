import { expect } from 'chai';
import { AppError } from '../errors.ts';
import { TASK_STATES } from '../item-types/schemas/task.ts';
import { taskDecider } from '../../command-side/catalog/taskLifecycle.ts';
import type { ItemEvent } from '../domain-events/itemEvents.ts';
import { decideRun, RUN_TABLE, type RunDecision, type RunEffect } from './runLifecycle.ts';
import { refusedTransitionDetail, TRANSITIONS, type RunTrigger } from './transitions.ts';
import type { TaskRecord } from './taskFields.ts';

const at = new Date('2026-01-02T03:04:05.000Z');

/** One command per trigger (the ClaimReleased target is set per case). */
const COMMANDS: Record<string, (task: TaskRecord) => RunTrigger> = {
  RunRequested: () => ({ trigger: 'RunRequested', origin: 'user', at, totalRetries: 3, retryInterval: 2, runBy: 'u1' }),
  Claimed: () => ({ trigger: 'Claimed', at }),
  SlotLeased: () => ({ trigger: 'SlotLeased', at, sessionId: 's1', dispatchId: 'd1' }),
  PickedUp: () => ({ trigger: 'PickedUp', at }),
  Succeeded: () => ({ trigger: 'Succeeded', at }),
  Errored: () => ({ trigger: 'Errored', at }),
  TimedOut: () => ({ trigger: 'TimedOut', at }),
  Cancelled: () => ({ trigger: 'Cancelled', at }),
  Failed: () => ({ trigger: 'Failed', at }),
  Reaped: () => ({ trigger: 'Reaped', at }),
  Reset: () => ({ trigger: 'Reset', at }),
  ClaimReleased: () => ({ trigger: 'ClaimReleased', to: 'scheduled' }),
};

/** given a task in `state` (ADHOC, no retries unless said), when `command`, the decision or the refusal. */
const given = (task: TaskRecord) => ({
  when: (command: RunTrigger) => ({
    then: (check: (decision: RunDecision) => void) => check(decideRun(task, command)),
    thenFails: (detail: string) => {
      try {
        decideRun(task, command);
      } catch (error) {
        expect(error).to.be.instanceOf(AppError);
        expect((error as AppError).status).to.equal(409);
        expect((error as AppError).detail).to.equal(detail);
        return;
      }
      expect.fail('the trigger was accepted');
    },
  }),
});

const effectTypes = (effects: RunEffect[]) => effects.map((effect) => effect.type);

/** The task decider (the item's guard) records a change of `from` into `changes` as this event. */
const recordedByItemDecider = (from: string, changes: Record<string, unknown>, reason?: 'dangerously_reset' | 'claim_released'): string | undefined => {
  const created: ItemEvent = {
    type: 'ItemCreated',
    data: { laui: 'x', item_type: 'task', name: 't', parent_laui: null, parent_type: null, link_laui: null, is_root: false, fields: { state: from }, access: { owners: {}, editors: {}, viewers: {} } as never, version: 1, revision_laui: 'x' },
  };
  const state = taskDecider.evolve(taskDecider.initialState(), created);
  return taskDecider.decide({ changes, version: 1, revisionLaui: null, ...(reason ? { reason } : {}) }, state)[0]?.type;
};

describe('run lifecycle decider (trigger + task -> events + effects)', () => {
  it('given the run triggers, then each has exactly one row of the table', () => {
    expect(RUN_TABLE.map((row) => row.trigger).sort()).to.deep.equal(Object.keys(COMMANDS).sort());
  });

  describe('every row, from every state its spec 3.1 rows leave', () => {
    for (const row of RUN_TABLE) {
      const targets = TRANSITIONS.filter((rule) => row.rows.includes(rule.trigger));
      const froms = [...new Set(targets.flatMap((rule) => (rule.from === 'any' ? [...TASK_STATES] : [...rule.from])))];
      for (const from of froms) {
        const command = COMMANDS[row.trigger]!({ state: from });
        const to = targets.find((rule) => rule.from === 'any' || rule.from.includes(from as never))?.to;
        if (row.trigger === 'ClaimReleased') (command as { to: string }).to = to as string;
        it(`given a task in ${from}, when ${row.trigger}, then ${row.event} records ${from} -> ${to} and asks for ${row.effects.join(', ') || 'nothing'}`, () => {
          given({ state: from }).when(command).then((decision) => {
            expect(decision.events).to.have.length(1);
            const [event] = decision.events;
            expect(event?.type).to.equal(row.event);
            expect(event?.data).to.deep.include({ from, to, trigger: row.trigger });
            expect(event?.data.changes.state).to.equal(to);
            expect(effectTypes(decision.effects)).to.include.members([...row.effects]);
            // The item decider, which guards every write of the task's stream, records the same event.
            const reason = row.trigger === 'Reset' ? 'dangerously_reset' : row.trigger === 'ClaimReleased' ? 'claim_released' : undefined;
            expect(recordedByItemDecider(from, event!.data.changes, reason)).to.equal(row.event);
          });
        });
      }
    }
  });

  describe('every refused transition', () => {
    for (const row of RUN_TABLE) {
      if (row.trigger === 'ClaimReleased') continue;
      const targets = TRANSITIONS.filter((rule) => row.rows.includes(rule.trigger));
      const leaves = new Set(targets.flatMap((rule) => (rule.from === 'any' ? [...TASK_STATES] : [...rule.from])));
      for (const from of TASK_STATES) {
        if (leaves.has(from)) continue;
        // Rule 8: a run requested for a task in flight is already in its queue (no refusal, nothing recorded).
        if (row.trigger === 'RunRequested' && ['queued_for_connection', 'queued_in_redis', 'running'].includes(from)) continue;
        const to = targets[0]!.to;
        it(`given a task in ${from}, when ${row.trigger}, then 409 (${from} -> ${to} is not in the table)`, () => {
          given({ state: from }).when(COMMANDS[row.trigger]!({ state: from })).thenFails(refusedTransitionDetail(from, to));
        });
      }
    }
    it('given a task in running, when the scheduler releases its claim, then 409', () => {
      given({ state: 'running' }).when({ trigger: 'ClaimReleased', to: 'scheduled' }).thenFails(refusedTransitionDetail('running', 'scheduled'));
    });
  });

  describe('the effects an outcome adds', () => {
    it('given a task in flight, when a user requests a run, then nothing is recorded nor done (rule 8)', () => {
      for (const state of ['queued_for_connection', 'queued_in_redis', 'running']) {
        given({ state }).when(COMMANDS.RunRequested!({})).then((decision) => expect(decision).to.deep.equal({ events: [], effects: [] }));
      }
    });
    it('given a claimed scheduled run, when the scheduler requests it, then its settings are recorded on the queued step and nothing is asked', () => {
      given({ state: 'queued_for_connection', frequency: 'ADHOC' })
        .when({ trigger: 'RunRequested', origin: 'scheduler', at, totalRetries: 2, retryInterval: 5, runBy: null })
        .then((decision) => {
          expect(decision.events.map((event) => event.type)).to.deep.equal(['TaskQueued']);
          expect(decision.events[0]?.data.changes).to.deep.include({ state: 'queued_for_connection', total_retries: 2, retry_interval: 5 });
          expect(decision.effects).to.deep.equal([]);
        });
    });
    it('given a leased run, when SlotLeased, then the message to publish names its session and dispatch', () => {
      given({ state: 'queued_for_connection' }).when(COMMANDS.SlotLeased!({})).then((decision) => expect(decision.effects).to.deep.equal([{ type: 'PublishExecuteTask', sessionId: 's1', dispatchId: 'd1' }]));
    });
    it('given a running hourly task whose next run is already due, when it succeeds, then the next run is dispatched at once', () => {
      given({ state: 'running', frequency: '0 * * * *', logical_date: '2026-01-01T00:00:00.000Z', next_run_date: '2026-01-01T01:00:00.000Z' })
        .when(COMMANDS.Succeeded!({}))
        .then((decision) => expect(effectTypes(decision.effects)).to.deep.equal(['ReleaseSlot', 'RunPostActions', 'DispatchNextRun']));
    });
    it('given a running task with retries left, when it errs, then the retry is scheduled after its retry_interval', () => {
      given({ state: 'running', total_retries: 3, retry_number: 0, retry_interval: 7 })
        .when(COMMANDS.Errored!({}))
        .then((decision) => {
          expect(decision.events[0]?.data.changes).to.deep.include({ state: 'error', retry_number: 1 });
          expect(decision.effects).to.deep.equal([{ type: 'ReleaseSlot', reason: 'finished' }, { type: 'RunPostActions' }, { type: 'ScheduleRetry', afterMinutes: 7 }]);
        });
    });
    it('given a running task on its last attempt, when it times out, then no retry is scheduled', () => {
      given({ state: 'running', total_retries: 2, retry_number: 1 })
        .when(COMMANDS.TimedOut!({}))
        .then((decision) => expect(effectTypes(decision.effects)).to.deep.equal(['ReleaseSlot', 'RunPostActions']));
    });
    it('given a dispatched run whose worker died, when the reaper ends it, then its slot is released as stale and no post action runs', () => {
      given({ state: 'queued_in_redis' })
        .when(COMMANDS.Reaped!({}))
        .then((decision) => {
          expect(decision.events.map((event) => event.type)).to.deep.equal(['TaskErrored']);
          expect(decision.effects).to.deep.equal([{ type: 'ReleaseSlot', reason: 'stale' }]);
        });
    });
  });
});
