import { expect } from 'chai';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ensureConsoleBuilt } from '../../ops/console/buildConsole.ts';
import { ADMIN, startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';
import { launchChromium, requireChromium } from '../support/browser.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';

/**
 * The console as a new user reads it (issue 33): a refused sign-in, references, the run banner,
 * revisions and history. Another user (bob) made the items; the administrator reads them in
 * Chromium. Every wait is for a condition in the page, never a fixed sleep.
 */

const COUNTER = `// Counts to four, a second apart: long enough to be seen queued and running.
export async function run() {
  for (let count = 1; count <= 4; count += 1) {
    console.log('count ' + count);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
export function check_completion() {
  return { status: 'success' };
}`;

const failedShots = mkdtempSync(join(tmpdir(), 'console-records-'));

describe('web console in Chromium: sign-in errors, references by name, the run banner, revision diffs, history', function () {
  this.timeout(300_000);
  let svc: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let bob: CatalogClient;
  let bed: TaskBed;
  let operator: string;
  let task: string;

  const url = (path: string): string => new URL(path, svc.service.url).href;
  const banner = () => page.getByTestId('run-banner');

  before(async function () {
    requireChromium(this);
    await ensureConsoleBuilt();
    svc = await startTestService();
    const admin = catalogClient(svc, (await svc.login()).token);
    bob = catalogClient(svc, (await createUser(svc, admin.token, 'bob')).token);
    bed = await taskBed(bob, 'bobs', { name: 'warehouse', content: { host: 'db.example' }, max_parallelism: 2 });
    operator = await bob.createOk({ item_type: 'operator', name: 'counter.operator', parent_laui: bed.workflow, codeblock: { language: 'javascript', code: COUNTER } });
    task = await bob.createOk({ item_type: 'task', ...bed.taskBody('count-task', operator) });
    mkdirSync(failedShots, { recursive: true });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.setDefaultTimeout(60_000);
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && page) {
      const file = join(failedShots, `failed-${this.currentTest.title.slice(0, 60).replace(/[^a-z0-9]+/gi, '-')}.png`);
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      console.log(`      page at failure: ${file} (${page.url()})`);
    }
  });

  after(async () => {
    await context?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await svc?.stop();
  });

  it('given the sign-in form, when a wrong password is submitted, then the form shows again with the reason, and the right password then signs in', async () => {
    await page.goto(url('/'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/public\/login$/);
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Invalid username or password' }).waitFor();
    expect(await page.getByLabel('Username').inputValue(), 'the username is kept').to.equal(ADMIN.username);
    expect(await page.getByLabel('Password').inputValue()).to.equal('');
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('treeitem', { name: /^bobs/ }).waitFor();
    expect(new URL(page.url()).pathname).to.equal('/');
  });

  it('given a task, when its details are shown, then its references read as the names of the items, each a link to the item', async () => {
    await page.goto(url(`/console/item/${task}`));
    await page.getByRole('heading', { level: 2, name: 'count-task' }).waitFor();
    const details = page.getByRole('tabpanel');
    const reference = (field: string) => details.locator('.field-row').filter({ has: page.locator('dt', { hasText: new RegExp(`^${field}$`) }) }).getByRole('link');
    await reference('operator_laui').filter({ hasText: 'counter.operator' }).waitFor();
    expect(await reference('connection_laui').textContent()).to.equal('warehouse');
    expect(await reference('project_laui').textContent()).to.equal('main');
    expect(await reference('account_laui').textContent()).to.equal('bobs');
    expect(await reference('parent_laui').textContent()).to.equal('wf');
    await reference('operator_laui').click();
    await page.getByRole('heading', { level: 2, name: 'counter.operator' }).waitFor();
    expect(new URL(page.url()).pathname).to.equal(`/console/item/${operator}`);
  });

  it('given a task, when it is run from the console, then the banner follows the run from queued or running to its end', async () => {
    await page.goto(url(`/console/item/${task}`));
    await page.getByRole('button', { name: 'Run now' }).click();
    await banner().filter({ hasText: /^Run (requested|queued|running)/ }).waitFor();
    await banner().filter({ hasText: /^Run (queued|running)/ }).waitFor({ timeout: 90_000 });
    await banner().filter({ hasText: 'Run finished: success' }).waitFor({ timeout: 90_000 });
    expect(await page.getByTestId('task-state').textContent()).to.equal('success');
    expect(await page.getByText('Run requested').count(), 'the request note is gone').to.equal(0);
    // Whose rights the run acted with is a user, named as such.
    const runBy = page.getByRole('tabpanel').locator('.field-row').filter({ has: page.locator('dt', { hasText: /^run_by$/ }) });
    await runBy.filter({ hasText: /^run_byadmin <[^>]+> \(you\)$/ }).waitFor();
  });

  it('given a connection edited from the console, when its revisions are opened, then the latest shows the changed field only, before and after', async () => {
    await page.goto(url(`/console/item/${bed.connection}`));
    await page.getByRole('heading', { level: 2, name: 'warehouse' }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByRole('spinbutton', { name: 'Max parallelism' }).fill('3');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    await page.getByRole('tab', { name: 'Revisions' }).click();
    const diff = page.getByRole('region', { name: 'Changes in version 2' });
    await diff.getByRole('row', { name: /max_parallelism/ }).waitFor();
    expect(await diff.getByRole('row').filter({ has: page.getByRole('rowheader') }).count(), 'only the changed field').to.equal(1);
    expect(await diff.getByRole('row', { name: /max_parallelism/ }).getByRole('cell').allTextContents()).to.deep.equal(['2', '3']);
    expect(await diff.locator('caption').textContent()).to.match(/^Version 2 against version 1 · by admin <admin@[^>]*> \(you\)/);
    // Version 1 is the first: every field it was created with is added.
    await page.getByRole('button', { name: 'Version 1' }).click();
    const first = page.getByRole('region', { name: 'Changes in version 1' });
    await first.getByRole('row', { name: /content/ }).waitFor();
    expect(await first.getByRole('row', { name: /max_parallelism/ }).getByRole('cell').allTextContents()).to.deep.equal(['—', '2']);
  });

  it('given an item made by bob and edited by the administrator, when its history is opened, then entries are numbered from 1, oldest first, and name both users', async () => {
    await page.getByRole('tab', { name: 'History' }).click();
    const entries = page.getByTestId('history-entry');
    await entries.filter({ hasText: 'bob <bob@example.com>' }).first().waitFor();
    const texts = await entries.allTextContents();
    expect(texts.length).to.be.at.least(2);
    expect(texts.map((text) => /^(\d+)\./.exec(text)?.[1])).to.deep.equal(texts.map((_, index) => String(index + 1)));
    expect(texts[0]).to.match(/^1\. ItemCreated .* · version 1 · by bob <bob@example\.com>/);
    const edit = texts.find((text) => /^\d+\. ItemUpdated/.test(text)) ?? '';
    expect(edit).to.match(/version 2 · by admin <[^>]+> \(you\)changed: max_parallelism/);
    expect(texts.join('\n')).not.to.match(/by user [0-9a-f]{24}/);
  });

  it('given bob, who may not read the event log, when he opens the same history, then he is named as himself and the administrator by id', async () => {
    const own = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const bobPage = await own.newPage();
      bobPage.setDefaultTimeout(60_000);
      await bobPage.goto(url(`/console/item/${bed.connection}`));
      await bobPage.getByRole('button', { name: 'Sign in' }).click();
      await bobPage.getByLabel('Username').fill('bob');
      await bobPage.getByLabel('Password').fill('password-123');
      await bobPage.getByRole('button', { name: 'Sign in' }).click();
      await bobPage.getByRole('heading', { level: 2, name: 'warehouse' }).waitFor();
      await bobPage.getByRole('tab', { name: 'History' }).click();
      const entries = bobPage.getByTestId('history-entry');
      // Names resolve after the entries render (every author reads `user <id>` at first): wait for
      // both the resolved own name and the administrator's entry by id, one element each.
      await entries.filter({ hasText: 'bob <bob@example.com> (you)' }).first().waitFor();
      await entries.filter({ hasText: /ItemUpdated .* by user [0-9a-f]{24}/ }).first().waitFor();
      const texts = await entries.allTextContents();
      expect(texts[0]).to.match(/^1\. ItemCreated .* by bob <bob@example\.com> \(you\)/);
      expect(texts[1]).to.match(/^2\. ItemUpdated .* by user [0-9a-f]{24}/);
    } finally {
      await own.close();
    }
  });

  it('given the connection at version 2, when version 1 is restored from its Revisions tab, then a preview diffs now against version 1, and confirming makes version 3 with version 1\'s values', async () => {
    await page.goto(url(`/console/item/${bed.connection}`));
    await page.getByRole('heading', { level: 2, name: 'warehouse' }).waitFor();
    await page.getByRole('tab', { name: 'Revisions' }).click();
    await page.getByRole('button', { name: 'Version 1' }).click();
    await page.getByRole('button', { name: 'Restore version 1…' }).click();
    // The preview: the fields a restore brings back that differ, as they are now and as they will be.
    const preview = page.getByRole('region', { name: 'What restoring version 1 changes' });
    await preview.getByRole('row', { name: /max_parallelism/ }).waitFor();
    expect(await preview.getByRole('row', { name: /max_parallelism/ }).getByRole('cell').allTextContents()).to.deep.equal(['3', '2']);
    expect(await preview.getByRole('row').filter({ has: page.getByRole('rowheader') }).count(), 'only what differs').to.equal(1);
    await page.getByRole('button', { name: 'Restore version 1', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Version 1 restored as a new version' }).waitFor();
    await page.getByRole('button', { name: 'Version 3' }).waitFor();
    const restored = (await bob.get({ item_laui: bed.connection })).json as { version: number; max_parallelism: number };
    expect(restored).to.include({ version: 3, max_parallelism: 2 });
    const latest = page.getByRole('region', { name: 'Changes in version 3' });
    expect(await latest.getByRole('row', { name: /max_parallelism/ }).getByRole('cell').allTextContents()).to.deep.equal(['3', '2']);
    // The latest version has nothing to restore.
    expect(await page.getByRole('button', { name: /^Restore version/ }).count()).to.equal(0);
  });
});
