import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import { diagnoseStream, journalDecider, type TaskDiagnosed } from './diagnosisJournal.ts';

const TASK = '65a000000000000000000001';
const given = deciderSpecification(journalDecider);
const diagnosis = (triggered: string[], diagnosed_at = '2026-01-01T00:00:00.000Z'): TaskDiagnosed['data'] => ({
  task_laui: TASK,
  diagnosed_at,
  triggered,
  checks: Object.fromEntries(triggered.map((key) => [key, { triggered: true }])),
});
const diagnosed = (data: TaskDiagnosed['data']): TaskDiagnosed => ({ type: 'TaskDiagnosed', data });

describe('diagnosis journal decider', () => {
  it('given no diagnosis yet, when a result comes (even one with nothing triggered), then TaskDiagnosed records it whole', () => {
    given().when(diagnosis(['paused_workflow'])).then([diagnosed(diagnosis(['paused_workflow']))]);
    given().when(diagnosis([])).then([diagnosed(diagnosis([]))]);
  });

  it('given the latest result, when the same checks trigger again later, then nothing is recorded (a polling UI adds nothing)', () => {
    given(diagnosed(diagnosis(['a', 'b']))).when(diagnosis(['a', 'b'], '2026-01-01T00:00:05.000Z')).then([]);
    given(diagnosed(diagnosis([]))).when(diagnosis([], '2026-01-01T00:00:05.000Z')).then([]);
  });

  it('given the latest result, when other checks trigger, then the new result is recorded', () => {
    const next = diagnosis(['a'], '2026-01-01T00:00:05.000Z');
    given(diagnosed(diagnosis(['a', 'b']))).when(next).then([diagnosed(next)]);
    const cleared = diagnosis([], '2026-01-01T00:00:06.000Z');
    given(diagnosed(diagnosis(['a']))).when(cleared).then([diagnosed(cleared)]);
  });

  it('given a result that changed and changed back, when the first set returns, then it is compared with the latest only and recorded', () => {
    const back = diagnosis(['a'], '2026-01-01T00:00:10.000Z');
    given(diagnosed(diagnosis(['a'])), diagnosed(diagnosis(['b']))).when(back).then([diagnosed(back)]);
  });

  it('given results, when folded, then the state is the latest set of triggered checks', () => {
    expect(journalDecider.initialState()).to.deep.equal({ lastTriggered: null });
    const state = [diagnosed(diagnosis(['a'])), diagnosed(diagnosis(['b', 'c']))].reduce(journalDecider.evolve, journalDecider.initialState());
    expect(state).to.deep.equal({ lastTriggered: ['b', 'c'] });
    expect(diagnoseStream(TASK)).to.equal(`diagnose-${TASK}`);
  });
});
