import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AS_OF_SORTED_CHILDREN_LIMIT } from '../../query-side/catalog/getItemsAsOf.ts';
import { seedLargeFolder } from '../support/seedCatalog.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';

type Page = { items: Array<{ name: string }>; pagination: { has_next: boolean; next_page_token: string | null } };

/**
 * An as_of listing folds every child it lists from the log: in creation order only as many as the
 * page needs, in another order all of them, bounded (a folder of any size must not let one request
 * fold its whole history).
 */
describe('as_of listings of a large folder (issue 36)', () => {
  const COUNT = AS_OF_SORTED_CHILDREN_LIMIT + 1;
  let svc: TestService;
  let admin: CatalogClient;
  let folder: string;
  const later = () => new Date(Date.now() + 60_000).toISOString();
  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'as-of-listing-'));
    ({ folder } = await seedLargeFolder(dataDir, COUNT));
    svc = await startTestService({}, {}, dataDir);
    admin = catalogClient(svc, (await svc.login()).token);
  });
  after(async () => svc.stop());

  it(`given a folder of ${COUNT} children, when listed as of now page after page in creation order, then each page is the next 50 children, as the current listing pages them`, async () => {
    let token: string | null = null;
    const names: string[] = [];
    for (let page = 0; page < 3; page += 1) {
      const reply = await admin.get({ item_laui: folder, parent_or_child: 'child', as_of: later(), per_page: 50, ...(token ? { page_token: token } : {}) });
      expect(reply.status, reply.text).to.equal(200);
      const body = reply.json as Page;
      names.push(...body.items.map((item) => item.name));
      expect(body.pagination.has_next).to.equal(true);
      token = body.pagination.next_page_token;
    }
    const current = (await admin.get({ item_laui: folder, parent_or_child: 'child', per_page: 150 })).json as Page;
    expect(names).to.deep.equal(current.items.map((item) => item.name));
  });

  it(`given the same folder, when listed as of now sorted by name, then 400 naming the bound of ${AS_OF_SORTED_CHILDREN_LIMIT}, never a fold of every child`, async () => {
    const reply = await admin.get({ item_laui: folder, parent_or_child: 'child', as_of: later(), sort_by: 'name' });
    expect(reply.status).to.equal(400);
    expect((reply.json as { detail: string }).detail).to.match(new RegExp(`^Invalid argument: as_of with sort_by=name lists folders of at most ${AS_OF_SORTED_CHILDREN_LIMIT} children`));
  });
});
