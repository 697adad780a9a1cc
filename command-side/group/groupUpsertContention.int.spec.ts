import { expect } from 'chai';
import { interceptAppends } from '../../test/support/interceptAppends.ts';
import { startTestService, type TestService } from '../../test/support/testService.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Issue 19: 100 parallel group/create upserts answered 503 to some callers. Every append to an
 * existing group stream is held a few milliseconds here, so that most of the concurrent updates
 * decide on the same revision and conflict, round after round, as on a busy machine: the outcome
 * no longer depends on how fast this machine happens to be.
 */
describe('POST /group/create under contention (HTTP, embedded service)', function () {
  this.timeout(120_000);
  let svc: TestService;
  let token: string;

  before(async () => {
    svc = await startTestService({}, {
      eventStoreView: (store) =>
        interceptAppends(store, async (appends) => {
          if (appends.some((append) => append.streamId.startsWith('group-') && append.expected !== 'no_stream')) await sleep(3);
        }),
    });
    ({ token } = await svc.login());
  });
  after(async () => svc.stop());

  it('given 100 concurrent upserts of one name, when their updates keep conflicting, then every caller gets 200 and one group holds the last description', async () => {
    const save = (index: number) => svc.client().post('/api/v1/group/create', { json: { name: 'Contended', description: `upsert ${index}` }, token });
    expect((await save(-1)).status).to.equal(200);
    const replies = await Promise.all(Array.from({ length: 100 }, (_, index) => save(index)));
    expect(replies.filter((reply) => reply.status !== 200).map((reply) => `${reply.status} ${reply.text}`)).to.deep.equal([]);
    const groups = (await svc.client().get('/api/v1/group/get?relation=all', { token })).json as Array<{ name: string; description: string }>;
    const named = groups.filter((group) => group.name === 'Contended');
    expect(named).to.have.length(1);
    expect(named[0]?.description).to.match(/^upsert \d+$/);
  });
});
