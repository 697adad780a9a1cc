import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ensureConsoleBuilt } from '../../ops/console/buildConsole.ts';
import { ADMIN, startTestService, type TestService } from '../support/testService.ts';
import { launchChromium, requireChromium } from '../support/browser.ts';
import { codeInMail, startSmtpServer, type LocalSmtpServer } from '../support/smtpServer.ts';

/**
 * The console's sign-in with EMAIL_TOTP, in Chromium: the service mails the code through a local
 * SMTP server, the sign-in page asks for it, and the console opens once it is entered. Every wait
 * is for a condition in the page or the mailbox, never a fixed sleep.
 */
describe('web console in Chromium: sign-in with a mailed code (EMAIL_TOTP)', function () {
  this.timeout(180_000);
  let smtp: LocalSmtpServer;
  let svc: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  const codeField = () => page.getByRole('textbox', { name: 'Code from the mail' });
  const mailedCode = async (count: number): Promise<string> => {
    const mail = (await smtp.waitForMails(count))[count - 1];
    expect(mail?.to).to.deep.equal(['admin@localhost']);
    return (mail && codeInMail(mail)) ?? '';
  };

  before(async function () {
    requireChromium(this);
    await ensureConsoleBuilt();
    smtp = await startSmtpServer();
    svc = await startTestService({ EMAIL_TOTP: 'true', SMTP_URL: smtp.url, MAIL_FROM: 'orchestrator@example.test' });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.setDefaultTimeout(60_000);
  });

  after(async () => {
    await context?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await svc?.stop();
    await smtp?.close();
  });

  it('given the login form passed, when the code field appears, then a wrong code is refused with what to do, and it survives a reload', async () => {
    await page.goto(new URL('/console/events', svc.service.url).href);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/public\/login$/);
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await codeField().waitFor();
    // Nothing of the flow stays in the address bar; the code never was in it.
    expect(new URL(page.url()).pathname).to.equal('/');
    expect(await mailedCode(1)).to.match(/^[0-9a-f]{32}$/);

    await codeField().fill('0'.repeat(32));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'This code is not valid' }).waitFor();

    await page.reload();
    await codeField().waitFor();
  });

  it('given a new code was asked for, when the mailed code is entered, then the console opens on the page the user came from', async () => {
    await page.getByRole('button', { name: 'Mail a new code' }).click();
    const code = await mailedCode(2);
    await codeField().waitFor();
    // Pasted from a mail client: surrounding blanks and capitals are forgiven.
    await codeField().fill(`  ${code.toUpperCase()}\n`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(new URL(page.url()).pathname).to.equal('/console/events');
    expect(await page.getByRole('heading', { level: 1 }).first().textContent()).to.include('Pipeline orchestrator');
  });
});
