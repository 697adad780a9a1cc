import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ensureConsoleBuilt } from '../../ops/console/buildConsole.ts';
import { ADMIN, startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';
import { closeBrowser, requireChromium, shotOnFailure, signedInPage } from '../support/browser.ts';
import { taskBed } from '../support/taskBed.ts';

/** Issue 36: the console shows a backfill's progress where the task's runs and diagnosis are. Waits are for conditions in the page. */

const failedShots = mkdtempSync(join(tmpdir(), 'console-backfill-'));
const DAY_MS = 24 * 60 * 60 * 1000;

describe('web console in Chromium: backfilling a scheduled task', function () {
  this.timeout(300_000);
  let svc: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let admin: CatalogClient;
  let task: string;

  const url = (path: string): string => new URL(path, svc.service.url).href;

  before(async function () {
    requireChromium(this);
    await ensureConsoleBuilt();
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    const bed = await taskBed(admin, 'backfill-console', { name: 'warehouse', content: {}, max_parallelism: 2 });
    const operator = await admin.createOk({ item_type: 'operator', name: 'noop.operator', parent_laui: bed.tree.folders.operator, codeblock: { language: 'javascript', code: 'export function run() {}' } });
    task = await admin.createOk({
      item_type: 'task',
      ...bed.taskBody('nightly', operator),
      frequency: '0 3 * * *',
      start_date: new Date(Date.now() - DAY_MS).toISOString(),
      end_date: new Date(Date.now() + 30 * DAY_MS).toISOString(),
    });
    ({ browser, context, page } = await signedInPage(url('/'), ADMIN, { width: 1280, height: 900 }));
    await page.getByRole('treeitem', { name: /^backfill-console/ }).waitFor();
  });

  afterEach(async function () {
    await shotOnFailure(this, page, failedShots);
  });

  after(async () => {
    await closeBrowser(context, browser);
    await svc?.stop();
  });

  it('given a scheduled task, when a range is backfilled from its page, then the progress follows the runs to completed, each step listed', async () => {
    await page.goto(url(`/console/item/${task}`));
    await page.getByRole('heading', { name: 'Backfill' }).waitFor();
    await page.getByLabel('From (UTC)').fill('2024-01-01');
    await page.getByLabel('To (UTC, included)').fill('2024-01-02');
    await page.getByRole('button', { name: 'Backfill', exact: true }).click();
    const progress = page.locator('[data-testid="backfill-progress"][data-status="completed"]');
    await progress.waitFor({ timeout: 90_000 });
    expect(await progress.textContent()).to.contain('2 of 2 done · 0 failed · 0 running · 0 not started');
    await page.getByText('Runs', { exact: true }).click();
    expect(await page.locator('ol.backfill-runs li').allTextContents()).to.deep.equal(['2024-01-01T00:00:00.000Z success', '2024-01-02T00:00:00.000Z success']);
  });

  it('given a range the service refuses, when backfilled, then its detail is shown', async () => {
    await page.goto(url(`/console/item/${task}`));
    await page.getByLabel('From (UTC)').fill('2024-01-05');
    await page.getByLabel('To (UTC, included)').fill('2024-01-01');
    await page.getByRole('button', { name: 'Backfill', exact: true }).click();
    await page.getByText('start_date must be earlier than or equal to end_date').waitFor();
  });
});
