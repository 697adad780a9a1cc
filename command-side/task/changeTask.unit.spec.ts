import { expect } from 'chai';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { ItemState } from '../catalog/item.ts';
import { taskViewOf } from './changeTask.ts';

const LAUI = '65a0000000000000000000e1';
const stored = (): ItemDoc =>
  ({ id: LAUI, laui: LAUI, item_type: 'task', name: 'old name', parent_laui: null, created_by: 'u1', created_at: '2026-01-01T00:00:00.000Z', state: 'success', iteration: 3, payload: { a: 1 } }) as unknown as ItemDoc;
const state: ItemState = {
  status: 'live',
  laui: LAUI,
  itemType: 'task',
  name: 't',
  parentLaui: '65a0000000000000000000e2',
  fields: { state: 'success', iteration: 4, logical_date: '2026-01-02T00:00:00.000Z' },
  access: { owners: {}, editors: {}, viewers: {} },
  version: 5,
};

describe('taskViewOf (a task as its stream holds it, over the read model)', () => {
  it('given changes about to be written, when laid over the view, then the one copy equals the view with them spread on top: values and key order', () => {
    const leading = { state: 'queued_for_connection', user_set_state: null, new_field: 'x' };
    const view = taskViewOf(stored(), state) as ItemDoc;
    const twoCopies = { ...view, ...leading };
    const oneCopy = taskViewOf(stored(), state, leading) as ItemDoc;
    expect(Object.keys(oneCopy)).to.deep.equal(Object.keys(twoCopies));
    expect(oneCopy).to.deep.equal(twoCopies);
    expect(oneCopy).to.include({ state: 'queued_for_connection', iteration: 4, name: 't', created_by: 'u1', new_field: 'x' });
  });

  it('given no changes, or a task the read model or the stream does not hold live, when viewed, then the plain view, or null', () => {
    expect(taskViewOf(stored(), state, null)).to.deep.equal(taskViewOf(stored(), state));
    expect(taskViewOf(null, state, { state: 'x' })).to.equal(null);
    expect(taskViewOf(stored(), { ...state, status: 'deleted' }, { state: 'x' })).to.equal(null);
  });
});
