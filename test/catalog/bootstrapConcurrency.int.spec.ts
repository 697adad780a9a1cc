import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';

interface Tree {
  account_laui: string;
  project_laui: string;
  folders: Record<string, string>;
  created: string[];
}

/** Issue 19: 20 parallel POST /catalog/bootstrap with one name created 20 accounts. */
describe('POST /catalog/bootstrap under concurrency (HTTP)', function () {
  this.timeout(120_000);
  let svc: TestService;
  let admin: CatalogClient;

  const rootsNamed = async (api: CatalogClient, name: string): Promise<string[]> => {
    const reply = await api.get({ is_root: true, per_page: 1000 });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.json as { items: Array<{ laui: string; name: string; item_type: string }> }).items
      .filter((item) => item.name === name && item.item_type === 'folder.account')
      .map((item) => item.laui);
  };

  before(async () => {
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
  });
  after(async () => svc.stop());

  it('given 20 concurrent bootstraps of one account name by one caller, when they race, then one account and one tree exist and every caller gets it with 200', async () => {
    const replies = await Promise.all(Array.from({ length: 20 }, () => admin.post('/bootstrap', { account_name: 'racing-co', project_name: 'main' })));
    expect(replies.map((reply) => reply.status), replies.map((reply) => reply.text).join('\n')).to.deep.equal(Array.from({ length: 20 }, () => 200));
    const trees = replies.map((reply) => reply.json as Tree);
    expect(await rootsNamed(admin, 'racing-co')).to.deep.equal([trees[0]?.account_laui]);
    for (const tree of trees) {
      expect(tree.account_laui).to.equal(trees[0]?.account_laui);
      expect(tree.project_laui).to.equal(trees[0]?.project_laui);
      expect(tree.folders).to.deep.equal(trees[0]?.folders);
    }
    // Every item of the tree was created once, by one of the callers.
    const created = trees.flatMap((tree) => tree.created);
    expect(new Set(created).size).to.equal(created.length);
    expect(created).to.have.members([trees[0]?.account_laui, trees[0]?.project_laui, ...Object.values(trees[0]?.folders ?? {})]);
  });

  it('given an account name another user bootstrapped, when a second user bootstraps it, then the second gets an account of their own (root names stay unconstrained)', async () => {
    const other = catalogClient(svc, (await createUser(svc, admin.token, 'other-founder')).token);
    const first = await admin.bootstrap('shared-name-co');
    const second = await other.bootstrap('shared-name-co');
    expect(second.account_laui).not.to.equal(first.account_laui);
    // And the first caller's bootstrap still finds its own.
    expect((await admin.bootstrap('shared-name-co')).account_laui).to.equal(first.account_laui);
  });

  it('given a bootstrapped account that was deleted, when bootstrapped again, then a new account is created', async () => {
    const first = await admin.bootstrap('phoenix-co');
    expect((await admin.post('/delete', { item_laui: first.account_laui })).status).to.equal(200);
    const again = await admin.bootstrap('phoenix-co');
    expect(again.account_laui).not.to.equal(first.account_laui);
  });
});
