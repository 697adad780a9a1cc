import { expect } from 'chai';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';
import type { LinkEvent } from '../../shared/domain-events/linkEvents.ts';
import { linkDecider, linkKey, linkStream } from './link.ts';

const given = deciderSpecification(linkDecider);
const AT = '2026-01-02T03:04:05.000Z';
const data = {
  link_laui: '65a0000000000000000000a1',
  parent_laui: '65a0000000000000000000b1',
  child_laui: '65a0000000000000000000c1',
  parent_type: 'folder.project',
  child_type: 'task',
  true_parent: false,
};
const created: LinkEvent = { type: 'LinkCreated', data };
const removed: LinkEvent = { type: 'LinkRemoved', data: { at: AT } };

describe('link decider', () => {
  it('given no link, when created, then LinkCreated carries the pair as given', () => {
    given().when({ kind: 'create', data }).then([created]);
  });

  it('given a live link, when created again, then nothing is recorded (linking twice returns the first link)', () => {
    given(created).when({ kind: 'create', data: { ...data, true_parent: true } }).then([]);
  });

  it('given a removed link, when created again on its stream, then nothing is recorded (a new pair gets a new stream)', () => {
    given(created, removed).when({ kind: 'create', data }).then([]);
  });

  it('given a live link, when removed, then LinkRemoved at the command\'s time', () => {
    given(created).when({ kind: 'remove', at: AT }).then([removed]);
  });

  it('given no link or a removed one, when removed, then nothing is recorded (two deletes at once write one removal)', () => {
    given().when({ kind: 'remove', at: AT }).then([]);
    given(created, removed).when({ kind: 'remove', at: '2026-01-03T00:00:00.000Z' }).then([]);
  });

  it('given events, when folded, then LinkCreated makes it live and LinkRemoved removed', () => {
    const fold = (...events: LinkEvent[]) => events.reduce(linkDecider.evolve, linkDecider.initialState());
    expect(fold()).to.deep.equal({ status: 'none' });
    expect(fold(created)).to.deep.equal({ status: 'live' });
    expect(fold(created, removed)).to.deep.equal({ status: 'removed' });
  });

  it('given a link and a pair, when named, then the stream is the link\'s and the key the ordered pair\'s', () => {
    expect(linkStream(data.link_laui)).to.equal('link-65a0000000000000000000a1');
    expect(linkKey(data.parent_laui, data.child_laui)).to.equal('link:65a0000000000000000000b1:65a0000000000000000000c1');
    expect(linkKey(data.child_laui, data.parent_laui)).to.not.equal(linkKey(data.parent_laui, data.child_laui));
  });
});
