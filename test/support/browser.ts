import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it). Never a downloaded browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Flags for a headless Chromium in a container as root on a machine without outside network: no
 * sandbox (root), no GPU, and none of the background fetches (updates, sync, QUIC probes) whose
 * refused connections slow every start.
 */
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

/**
 * Call in a `before` hook: without Chromium the suite is skipped with the reason printed, except in
 * CI (CI=true), where it fails: .ci/run installs Chromium, so a missing one is a broken build.
 */
export function requireChromium(context: Mocha.Context): void {
  if (existsSync(CHROMIUM)) return;
  const message = `Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium)`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`${message}: CI needs it (.ci/run installs it)`);
  console.log(`      skipped: ${message}`);
  context.skip();
}

/** A headless Chromium; Playwright gives it a fresh, empty profile of its own and removes it on close. */
export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });

/** From an afterEach hook: a failing test leaves a picture of the page in `dir`, named after the test. */
export async function shotOnFailure(context: Mocha.Context, page: Page | undefined, dir: string): Promise<void> {
  const test = context.currentTest;
  if (test?.state !== 'failed' || !page) return;
  const file = join(dir, `failed-${test.title.slice(0, 60).replace(/[^a-z0-9]+/gi, '-')}.png`);
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.log(`      page at failure: ${file} (${page.url()})`);
}

/** From an after hook: closes what a browser spec opened, whatever of it did open. */
export async function closeBrowser(context: BrowserContext | undefined, browser: Browser | undefined): Promise<void> {
  await context?.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
}

/** Signs in as a user would: the console's Sign in, then the service's login form. */
export async function signInWithForm(page: Page, consoleUrl: string, credentials: { username: string; password: string }): Promise<void> {
  await page.goto(consoleUrl);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/public\/login$/);
  await page.getByLabel('Username').fill(credentials.username);
  await page.getByLabel('Password').fill(credentials.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** A Chromium page signed in to the console at `consoleUrl` (what a browser spec's before hook opens). */
export async function signedInPage(
  consoleUrl: string,
  credentials: { username: string; password: string },
  viewport: { width: number; height: number } = { width: 1280, height: 800 },
): Promise<{ browser: Browser; context: BrowserContext; page: Page }> {
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  await signInWithForm(page, consoleUrl, credentials);
  return { browser, context, page };
}
