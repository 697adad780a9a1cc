import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
