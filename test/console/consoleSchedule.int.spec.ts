import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ensureConsoleBuilt } from '../../ops/console/buildConsole.ts';
import { ADMIN, startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';
import { closeBrowser, requireChromium, shotOnFailure, signedInPage } from '../support/browser.ts';
import { taskBed, type TaskBed } from '../support/taskBed.ts';

/**
 * Issue 33: the console's New task form saved schedules that can never run. The service refuses
 * them now; the form shows the refusal beside the fields it is about. Every wait is for a condition
 * in the page, never a fixed sleep.
 */

const failedShots = mkdtempSync(join(tmpdir(), 'console-schedule-'));

describe('web console in Chromium: a task form with a schedule that cannot run', function () {
  this.timeout(300_000);
  let svc: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let admin: CatalogClient;
  let bed: TaskBed;
  let operator: string;

  const url = (path: string): string => new URL(path, svc.service.url).href;
  const field = (label: string) => page.getByRole('textbox', { name: label, exact: true });
  /** The error shown beside a field: the element its aria-describedby names. */
  const errorBeside = async (label: string): Promise<string | null> => {
    const described = await field(label).getAttribute('aria-describedby');
    return described === null ? null : page.locator(`[id="${described}"].field-error`).textContent();
  };
  const tasksNamed = async (name: string) =>
    ((await admin.search({ item_filter: { item_type: 'task', name, project_laui: bed.tree.project_laui } })).json as { items: unknown[] }).items;

  before(async function () {
    requireChromium(this);
    await ensureConsoleBuilt();
    svc = await startTestService();
    admin = catalogClient(svc, (await svc.login()).token);
    bed = await taskBed(admin, 'sched-co', { name: 'warehouse', content: {}, max_parallelism: 2 });
    operator = await admin.createOk({ item_type: 'operator', name: 'noop.operator', parent_laui: bed.workflow, codeblock: { language: 'javascript', code: 'export function run() {}' } });
    ({ browser, context, page } = await signedInPage(url('/'), ADMIN));
    await page.getByRole('treeitem', { name: /^sched-co/ }).waitFor();
  });

  afterEach(async function () {
    await shotOnFailure(this, page, failedShots);
  });

  after(async () => {
    await closeBrowser(context, browser);
    await svc?.stop();
  });

  it('given the New task form, when a bad cron, then a cron without dates are submitted, then each refusal shows beside its fields and nothing is created; fixed, it is created', async () => {
    await page.goto(url(`/console/item/${bed.workflow}`));
    await page.getByRole('button', { name: 'New item here' }).click();
    await page.getByRole('combobox', { name: /^Type of the new item/ }).selectOption('task');
    await field('Name').fill('form-task');
    await page.getByRole('combobox', { name: 'Operator', exact: true }).selectOption({ label: 'noop.operator (operator)' });
    await page.getByRole('combobox', { name: 'Connection', exact: true }).selectOption({ label: 'warehouse (connection)' });
    const create = page.getByRole('button', { name: 'Create', exact: true });

    await field('Frequency').fill('61 * * * *');
    await create.click();
    await page.locator('.field-error').filter({ hasText: 'invalid cron expression: 61 * * * *' }).waitFor();
    expect(await errorBeside('Frequency')).to.equal('invalid cron expression: 61 * * * *');
    expect(await field('Frequency').getAttribute('aria-invalid')).to.equal('true');
    await page.getByRole('alert').filter({ hasText: 'invalid cron expression: 61 * * * *' }).waitFor();

    await field('Frequency').fill('0 0 * * *');
    await field('Start date').fill('2026-01-01T00:00:00Z');
    await create.click();
    await page.locator('.field-error').filter({ hasText: 'start_date and end_date required for scheduled tasks' }).waitFor();
    expect(await errorBeside('End date')).to.equal('start_date and end_date required for scheduled tasks');
    expect(await errorBeside('Start date'), 'only the missing date is marked').to.equal(null);
    expect(await errorBeside('Frequency')).to.equal(null);
    expect(await tasksNamed('form-task')).to.deep.equal([]);

    await field('End date').fill('2027-01-01T00:00:00Z');
    await create.click();
    await page.getByRole('heading', { level: 2, name: 'form-task' }).waitFor();
    expect(await tasksNamed('form-task')).to.have.length(1);
  });

  it('given a task edited with its form, when end_date is set before start_date, then the refusal shows beside End date and the task keeps its dates', async () => {
    const laui = await admin.createOk({ item_type: 'task', ...bed.taskBody('edited-task', operator), frequency: '0 0 * * *', start_date: '2026-01-01T00:00:00Z', end_date: '2027-01-01T00:00:00Z' });
    await page.goto(url(`/console/item/${laui}`));
    await page.getByRole('heading', { level: 2, name: 'edited-task' }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await field('End date').fill('2025-01-01T00:00:00Z');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('.field-error').filter({ hasText: 'end_date must be greater than or equal to start_date' }).waitFor();
    expect(await errorBeside('End date')).to.equal('end_date must be greater than or equal to start_date');
    expect(((await admin.get({ item_laui: laui })).json as Record<string, unknown>).end_date).to.equal('2027-01-01T00:00:00Z');
  });
});
