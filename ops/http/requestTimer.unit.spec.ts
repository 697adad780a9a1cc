import { expect } from 'chai';
import { routeLabelOf } from './requestTimer.ts';

describe('routeLabelOf', () => {
  it('given a request a router served, when labelled, then the label is the layer template, never the path', () => {
    expect(routeLabelOf({ path: '/api/v1/task/update/0123456789abcdef01234567', _matchedRoute: '/api/v1/task/update/:task_laui' })).to.equal('/api/v1/task/update/:task_laui');
  });

  it('given a request no router served, when labelled, then /healthz keeps its name and anything else is `unmatched`', () => {
    expect(routeLabelOf({ path: '/healthz' })).to.equal('/healthz');
    expect(routeLabelOf({ path: '/api/v1/nothing/0123456789abcdef01234567' })).to.equal('unmatched');
    expect(routeLabelOf({ path: '/x', _matchedRoute: /x/ })).to.equal('unmatched');
  });
});
