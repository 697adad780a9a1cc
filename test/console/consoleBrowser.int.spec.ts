import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { ensureConsoleBuilt } from '../../ops/console/buildConsole.ts';
import { ADMIN, startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';
import { closeBrowser, launchChromium, requireChromium, shotOnFailure, signInWithForm } from '../support/browser.ts';
import { seedLargeFolder, type SeededFolder } from '../support/seedCatalog.ts';
import { POSTGRES, requireDatabase } from '../support/databases.ts';

/**
 * The web console in a real browser (Debian's Chromium through playwright-core): the README's
 * first steps as a new user takes them, and the console's budgets. Screenshots go to
 * docs/screenshots with UPDATE_SCREENSHOTS=1 (the README shows them), elsewhere to a temporary
 * folder. Every wait is for a condition in the page, never a fixed sleep.
 */

/** Budgets of issue 26: JavaScript of the first load, gzipped (asserted); the 10,000-item tree's first screen (printed). */
const FIRST_LOAD_JS_GZIP_BUDGET = 300 * 1024;
const TREE_FIRST_SCREEN_BUDGET_MS = 1000;
const LARGE_FOLDER_ITEMS = 10_000;

const TICKER = `// Prints a line a second for six seconds: its output must show up while it runs.
export async function run(connection, payload, context) {
  for (let tick = 1; tick <= 6; tick += 1) {
    console.log('tick ' + tick + ' of ' + context.task_name);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
export function check_completion() {
  return { status: 'success', ticks: 6 };
}`;

const SLEEPER = `export function run() {
  console.log('waiting to be cancelled');
}
export function check_completion() {
  return { status: 'running' };
}`;

const screenshotDir = process.env.UPDATE_SCREENSHOTS === '1' ? join(process.cwd(), 'docs', 'screenshots') : mkdtempSync(join(tmpdir(), 'console-shots-'));

/** Script responses of a page, gzipped the way a server would send them. */
const scriptBudget = (page: Page) => {
  const bodies = new Map<string, Promise<number>>();
  const listener = (response: Response): void => {
    if (response.request().resourceType() !== 'script' || bodies.has(response.url())) return;
    bodies.set(response.url(), response.body().then((body) => gzipSync(body, { level: 9 }).length, () => 0));
  };
  page.on('response', listener);
  return {
    async total(): Promise<{ bytes: number; files: string[] }> {
      page.off('response', listener);
      const sizes = await Promise.all(bodies.values());
      return { bytes: sizes.reduce((sum, size) => sum + size, 0), files: [...bodies.keys()].map((url) => new URL(url).pathname) };
    },
  };
};

describe('web console in Chromium: sign in, build a workflow, run it live, cancel, query logs; budgets', function () {
  this.timeout(300_000);
  let svc: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let seeded: SeededFolder;
  let admin: CatalogClient;
  let dataDir: string;
  const created = { workflow: '', task: '' };

  const url = (path: string): string => new URL(path, svc.service.url).href;
  const shot = async (name: string, options: { fullPage?: boolean } = {}): Promise<void> => {
    await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: options.fullPage ?? false });
  };
  const taskState = () => page.getByTestId('task-state');
  const waitForState = (state: RegExp, timeout = 90_000) => page.getByTestId('task-state').filter({ hasText: state }).waitFor({ timeout });
  /** Polls an expression in the page (evaluated by the browser, not by page script: the CSP forbids eval). */
  const waitUntil = async (expression: string, timeout = 60_000): Promise<void> => {
    const deadline = Date.now() + timeout;
    while (!(await page.evaluate(expression))) {
      if (Date.now() > deadline) throw new Error(`still false after ${timeout} ms: ${expression}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  /** What the page's own listener saw: CSP violations of the current document. */
  const cspViolations = async (): Promise<string[]> => (await page.evaluate('window.__cspViolations ?? []')) as string[];
  /** Form controls without an accessible name (label, aria-label or aria-labelledby). */
  const unlabelledControls = async (): Promise<string[]> =>
    (await page.evaluate(`[...document.querySelectorAll('input, select, textarea, [role="textbox"]')]
      .filter((el) => el.type !== 'hidden' && !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
      .map((el) => el.outerHTML.slice(0, 120))`)) as string[];
  const openTreeItem = async (name: RegExp): Promise<void> => {
    await page.getByRole('treeitem', { name }).first().click();
  };
  const newItem = async (itemType: string, name: string): Promise<void> => {
    await page.getByRole('button', { name: 'New item here' }).click();
    await page.getByRole('combobox', { name: /^Type of the new item/ }).selectOption(itemType);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill(name);
  };
  const create = async (name: string): Promise<void> => {
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { level: 2, name }).waitFor();
  };

  before(async function () {
    requireChromium(this);
    const build = await ensureConsoleBuilt();
    if (build.built) console.log(`      (console built in ${build.seconds.toFixed(1)} s)`);
    dataDir = mkdtempSync(join(tmpdir(), 'console-e2e-'));
    seeded = await seedLargeFolder(dataDir, LARGE_FOLDER_ITEMS);
    svc = await startTestService({}, {}, dataDir);
    admin = catalogClient(svc, (await svc.login()).token);
    mkdirSync(screenshotDir, { recursive: true });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // Injected by the browser itself (not a page script, so the page's CSP does not apply to it).
    await context.addInitScript(`window.__cspViolations = [];
      document.addEventListener('securitypolicyviolation', (event) => window.__cspViolations.push(event.violatedDirective + ' ' + event.blockedURI));`);
    page = await context.newPage();
    page.setDefaultTimeout(60_000);
  });

  // A failing step leaves a picture of the page beside the screenshots, named after the test.
  afterEach(async function () {
    await shotOnFailure(this, page, screenshotDir);
  });

  after(async () => {
    await closeBrowser(context, browser);
    await svc?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('given the console at /, when a user signs in through the service login form, then the catalog opens and its first load stays within 300 KB of gzipped JavaScript', async () => {
    const scripts = scriptBudget(page);
    await signInWithForm(page, url('/'), ADMIN);
    await page.getByRole('treeitem', { name: /^scale/ }).waitFor();
    // Back from /console/callback: the code is spent and gone from the address bar.
    expect(new URL(page.url()).pathname).to.equal('/');
    const { bytes, files } = await scripts.total();
    console.log(`      first load: ${files.length} script(s), ${(bytes / 1024).toFixed(1)} KB gzipped (budget ${FIRST_LOAD_JS_GZIP_BUDGET / 1024} KB)`);
    expect(bytes).to.be.greaterThan(0);
    expect(bytes).to.be.at.most(FIRST_LOAD_JS_GZIP_BUDGET);
    expect(files.some((file) => /CodeEditor/.test(file)), 'the code editor loads on demand').to.equal(false);
    expect(await cspViolations()).to.deep.equal([]);
  });

  it('given a new account, when a workflow with an operator, a connection and a task is created with the forms, then the catalog holds them as entered', async () => {
    await page.getByLabel('Account name').fill('acme');
    await page.getByRole('button', { name: 'New account' }).click();
    await page.getByRole('heading', { level: 2, name: 'main' }).waitFor();
    await openTreeItem(/^main/);
    await openTreeItem(/^workflow folder\.workflow/);
    await page.getByRole('heading', { level: 2, name: 'workflow' }).waitFor();

    await newItem('folder.workflow', 'nightly');
    await create('nightly');
    created.workflow = new URL(page.url()).pathname.split('/').pop() ?? '';

    await newItem('operator', 'ticker.operator');
    await page.getByRole('combobox', { name: 'Codeblock language' }).selectOption('javascript');
    await page.getByRole('textbox', { name: 'Codeblock code' }).fill(TICKER);
    await create('ticker.operator');
    expect(await cspViolations(), 'the code editor keeps to the CSP').to.deep.equal([]);

    await openTreeItem(/^nightly/);
    await newItem('connection', 'warehouse');
    await page.getByRole('textbox', { name: 'Content (JSON)' }).fill('{"host": "db.example"}');
    await page.getByRole('spinbutton', { name: 'Max parallelism' }).fill('2');
    await create('warehouse');

    await openTreeItem(/^nightly/);
    await newItem('task', 'ticker-task');
    await page.getByRole('combobox', { name: 'Operator', exact: true }).selectOption({ label: 'ticker.operator (operator)' });
    await page.getByRole('combobox', { name: 'Connection', exact: true }).selectOption({ label: 'warehouse (connection)' });
    expect(await unlabelledControls()).to.deep.equal([]);
    await shot('console-new-task-1280');
    await create('ticker-task');
    created.task = new URL(page.url()).pathname.split('/').pop() ?? '';

    const task = (await admin.get({ item_laui: created.task })).json as Record<string, unknown>;
    const operator = (await admin.get({ item_laui: String(task.operator_laui) })).json as Record<string, unknown>;
    const connection = (await admin.get({ item_laui: String(task.connection_laui) })).json as Record<string, unknown>;
    expect(task).to.include({ name: 'ticker-task', parent_laui: created.workflow, item_type: 'task' });
    expect(operator.codeblock).to.deep.equal({ language: 'javascript', code: TICKER });
    expect(connection).to.include({ name: 'warehouse', max_parallelism: 2 });
    expect(connection.content).to.deep.equal({ host: 'db.example' });
  });

  it('given the task, when it is run from the console, then its output appears line by line while it runs and the state ends success', async () => {
    await page.getByRole('button', { name: 'Run now' }).click();
    const output = page.getByRole('log', { name: 'Run output' });
    await output.filter({ hasText: 'tick 1 of ticker-task' }).waitFor({ timeout: 90_000 });
    // Live: the first line is on screen before the run has printed its last one (5 s later).
    expect(await output.textContent()).not.to.include('tick 6');
    expect(await taskState().textContent()).to.match(/running|queued/);
    await waitForState(/^success$/);
    await output.filter({ hasText: 'tick 6 of ticker-task' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'complete' }).waitFor();
    await shot('console-task-1280');
  });

  it('given a run that waits, when Cancel run is pressed, then the run ends cancelled', async () => {
    const operator = await admin.createOk({ item_type: 'operator', name: 'sleeper.operator', parent_laui: created.workflow, codeblock: { language: 'javascript', code: SLEEPER } });
    const task = ((await admin.get({ item_laui: created.task })).json as Record<string, string>);
    const sleeper = await admin.createOk({
      item_type: 'task', name: 'sleeper-task', parent_laui: created.workflow, project_laui: task.project_laui, account_laui: task.account_laui,
      operator_laui: operator, connection_laui: task.connection_laui,
    });
    await page.goto(url(`/console/item/${sleeper}`));
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.getByRole('log', { name: 'Run output' }).filter({ hasText: 'waiting to be cancelled' }).waitFor({ timeout: 90_000 });
    await waitForState(/^running$/);
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await waitForState(/^cancelled$/);
    const after = (await admin.get({ item_laui: sleeper })).json as Record<string, unknown>;
    expect(after.state).to.equal('cancelled');
    // Diagnose names the reason it will not run again.
    await page.getByRole('button', { name: 'Why does it not run?' }).click();
    await page.getByRole('listitem').filter({ hasText: 'State is cancelled' }).filter({ hasText: 'blocking' }).waitFor();
  });

  it('given runs that printed, when their lines are queried with SQL in Log query, then the table shows them', async () => {
    await page.getByRole('link', { name: 'Log query' }).click();
    await page.getByLabel('Category').selectOption('TASK');
    await page.getByRole('textbox', { name: 'SQL' }).fill("SELECT timestamp, task_name, message FROM logs WHERE message LIKE 'tick %' ORDER BY timestamp");
    await page.getByRole('button', { name: 'Run query' }).click();
    const table = page.getByRole('region', { name: 'Log query result' });
    await table.getByRole('cell', { name: 'tick 6 of ticker-task' }).waitFor();
    expect(await table.getByRole('cell', { name: /^tick \d of ticker-task$/ }).count()).to.equal(6);
    await shot('console-logs-1280');
  });

  it('given an item, when it is edited with its form, then a new version holds the change and the revisions and history show it', async () => {
    const connection = ((await admin.get({ item_laui: created.task })).json as Record<string, string>).connection_laui as string;
    await page.goto(url(`/console/item/${connection}`));
    await page.getByRole('heading', { level: 2, name: 'warehouse' }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByRole('spinbutton', { name: 'Max parallelism' }).fill('3');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    const saved = (await admin.get({ item_laui: connection })).json as Record<string, unknown>;
    expect(saved).to.include({ max_parallelism: 3, version: 2 });
    expect(saved.content, 'fields left alone are not rewritten').to.deep.equal({ host: 'db.example' });
    await page.getByRole('tab', { name: 'Revisions' }).click();
    await page.getByRole('button', { name: 'Version 2' }).click();
    await page.getByRole('region', { name: 'Changes in version 2' }).getByRole('row', { name: /max_parallelism/ }).filter({ hasText: '3' }).waitFor();
    await page.getByRole('tab', { name: 'History' }).click();
    await page.getByRole('tabpanel').getByText('changed: max_parallelism').waitFor();
  });

  it('given a project, when its cron is started and stopped from the console, then the status follows', async () => {
    await page.goto(url(`/console/item/${((await admin.get({ item_laui: created.task })).json as Record<string, string>).project_laui}`));
    await page.getByRole('button', { name: 'Start cron' }).click();
    await page.getByTestId('cron-status').filter({ hasText: /^(STARTED|RUNNING)$/ }).waitFor();
    await page.getByRole('table').getByRole('link', { name: 'warehouse' }).waitFor();
    await shot('console-project-1280');
    await page.getByRole('button', { name: 'Stop cron' }).click();
    await page.getByTestId('cron-status').filter({ hasText: /^(STOP|STOPPED)$/ }).waitFor();
  });

  it('given an administrator, when the event stream is opened, then the log\'s events arrive', async () => {
    await page.getByRole('link', { name: 'Events' }).click();
    const events = page.getByRole('list', { name: 'Events, newest first' });
    await events.getByText('TaskSucceeded').first().waitFor();
    await shot('console-events-1280');
  });

  it('given PostgreSQL behind a connection, when a statement is run in SQL inspection, then its rows show', async function () {
    await requireDatabase(this, 'postgresql');
    const connection = await admin.createOk({
      item_type: 'connection.postgresql', name: 'local-pg', parent_laui: created.workflow,
      content: { host: POSTGRES.host, port: POSTGRES.port, user: POSTGRES.user, database: POSTGRES.database },
    });
    await page.goto(url(`/console/sql?connection=${connection}`));
    await page.getByRole('textbox', { name: 'SQL' }).fill("SELECT 40 + 2 AS answer, 'console' AS via");
    await page.getByRole('button', { name: 'Run statement' }).click();
    const table = page.getByRole('region', { name: 'Statement result' });
    await table.getByRole('cell', { name: '42' }).waitFor();
    expect(await table.getByRole('columnheader').allTextContents()).to.deep.equal(['answer', 'via']);
  });

  it(`given a folder of ${LARGE_FOLDER_ITEMS.toLocaleString('en')} items, when it is opened in the tree, then its first screen paints within 1 s and only the rows in view exist`, async () => {
    // The folder's project is shown (and opened); the folder is the row after it, still closed.
    await page.goto(url(`/console/item/${seeded.project}`));
    await page.getByRole('heading', { level: 2, name: 'big' }).waitFor();
    const tree = page.getByRole('tree', { name: 'Catalog' });
    await tree.getByRole('treeitem', { name: /^many/, expanded: false }).waitFor();
    await tree.focus();
    await page.keyboard.press('ArrowDown');
    expect(await tree.getAttribute('aria-activedescendant')).to.equal(`tree-row-${seeded.folder}`);
    // Measures (performance.measure, made by the tree) that begin after this point are this expansion's.
    const pressedAt = (await page.evaluate('performance.now()')) as number;
    await page.keyboard.press('ArrowRight');
    await tree.getByRole('treeitem', { name: /^p-00000/ }).waitFor();
    await waitUntil(`document.querySelector('[role="tree"]').dataset.rows >= ${LARGE_FOLDER_ITEMS}`, 120_000);
    const measures = async (name: string, since: number): Promise<Array<{ start: number; end: number }>> =>
      (await page.evaluate(
        `performance.getEntriesByName(${JSON.stringify(name)}).filter((entry) => entry.startTime >= ${since}).map((entry) => ({ start: entry.startTime, end: entry.startTime + entry.duration }))`,
      )) as Array<{ start: number; end: number }>;
    const [expanded] = await measures('catalog-tree:expand-to-paint', pressedAt);
    const [firstPage] = await measures('catalog-tree:data-to-paint', pressedAt);
    expect(expanded, 'the expansion was measured').to.not.equal(undefined);
    expect(firstPage, 'the first page was measured').to.not.equal(undefined);
    const dataToPaint = (firstPage?.end ?? 0) - (firstPage?.start ?? 0);
    const pressToFirstScreen = (firstPage?.end ?? 0) - (expanded?.start ?? 0);
    const rendered = await tree.getByRole('treeitem').count();
    expect(rendered, 'virtualized: only the rows in view (and a few beyond) are in the page').to.be.below(100);

    // All 10,000 in hand: closing and opening the folder again is the render alone.
    await page.keyboard.press('ArrowLeft');
    await waitUntil(`document.querySelector('[role="tree"]').dataset.rows < 100`);
    const reopenedAt = (await page.evaluate('performance.now()')) as number;
    await page.keyboard.press('ArrowRight');
    await waitUntil(`performance.getEntriesByName('catalog-tree:expand-to-paint').some((entry) => entry.startTime >= ${reopenedAt})`);
    const [reopened] = await measures('catalog-tree:expand-to-paint', reopenedAt);
    const reopen = (reopened?.end ?? 0) - (reopened?.start ?? 0);
    console.log(
      `      tree of ${LARGE_FOLDER_ITEMS} items: first page (1,000) data to paint ${dataToPaint.toFixed(0)} ms; key press to first screen ${pressToFirstScreen.toFixed(0)} ms (fetch of the first 1,000 included); ` +
        `re-open with all ${LARGE_FOLDER_ITEMS} rows ${reopen.toFixed(0)} ms (target ${TREE_FIRST_SCREEN_BUDGET_MS} ms); ${rendered} rows in the page`,
    );
    // The durations are printed against the target, not asserted: asserted, they fail on a loaded CI
    // machine rather than on a slow tree. What is asserted is what makes them small: virtualized rows.
    expect(dataToPaint, 'the first page was painted').to.be.greaterThan(0);
    expect(reopen, 'the re-opened folder was painted').to.be.greaterThan(0);

    // Keyboard: End goes to the last row (the root after `scale`), Up to the last of the 10,000,
    // which the tree scrolls into view; Enter opens it.
    await page.keyboard.press('End');
    await page.keyboard.press('ArrowUp');
    await tree.getByRole('treeitem', { name: /^p-09999/ }).waitFor();
    expect(await tree.getAttribute('aria-activedescendant')).to.match(/^tree-row-[0-9a-f]{24}$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 2, name: 'p-09999' }).waitFor();
    await shot('console-catalog-1280');
  });

  it('given a phone-sized window (390 px), when the catalog and a task are shown, then nothing scrolls sideways', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(url(`/console/item/${created.task}`));
    await page.getByRole('heading', { level: 2, name: 'ticker-task' }).waitFor();
    await page.getByRole('log', { name: 'Run output' }).filter({ hasText: 'tick 6 of ticker-task' }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(390);
    await shot('console-task-390');
    await page.goto(url(`/console/item/${created.workflow}`));
    await page.getByRole('heading', { level: 2, name: 'nightly' }).waitFor();
    await page.getByRole('treeitem', { name: /^ticker-task/ }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(390);
    await shot('console-catalog-390');
    expect(await cspViolations()).to.deep.equal([]);
  });
});
