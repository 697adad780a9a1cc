import { expect } from 'chai';
import type { AttemptThrottle, LoginAttempt, ThrottleDecision } from '../../shared/ports/AttemptThrottle.ts';
import { failureThrottle, loginThrottle, memoryLimiters, type LoginThrottleSettings } from './rateLimiterThrottles.ts';

const SETTINGS: LoginThrottleSettings = {
  perUserAddress: { maxFailures: 5, windowSeconds: 900, blockSeconds: 60, maxBlockSeconds: 3600 },
  maxFailuresPerAddress: 20,
  maxFailuresPerUsername: 50,
  knownAddressSeconds: 14 * 24 * 3600,
};

const retryOf = (decision: ThrottleDecision): number | null => (decision.allowed ? null : decision.retryAfterSeconds);

/** `count` failed attempts; returns how many were allowed. */
const fail = async <Key>(throttle: AttemptThrottle<Key>, key: Key, count: number): Promise<number> => {
  let allowed = 0;
  for (let index = 0; index < count; index += 1) if ((await throttle.begin(key)).allowed) allowed += 1;
  return allowed;
};

const succeed = async <Key>(throttle: AttemptThrottle<Key>, key: Key): Promise<void> => {
  const decision = await throttle.begin(key);
  if (!decision.allowed) throw new Error(`refused for ${decision.retryAfterSeconds}s`);
  await decision.succeeded();
};

/** Waits (polling, generous bound) until the key is allowed again; that attempt counts as a failure. */
const waitUntilAllowed = async <Key>(throttle: AttemptThrottle<Key>, key: Key): Promise<void> => {
  const deadline = Date.now() + 30_000;
  while (!(await throttle.begin(key)).allowed) {
    if (Date.now() > deadline) throw new Error('still blocked after 30 s');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

describe('loginThrottle (rate-limiter-flexible, memory)', () => {
  const victim = (address: string): LoginAttempt => ({ username: 'alice', address });

  it('given five failures for one name at one address, when a sixth comes, then it is refused for the first block', async () => {
    const throttle = loginThrottle(memoryLimiters, SETTINGS);
    expect(await fail(throttle, victim('203.0.113.1'), 5)).to.equal(5);
    expect(retryOf(await throttle.begin(victim('203.0.113.1')))).to.equal(60);
    // The name is case-insensitive: a different spelling is the same key.
    expect(retryOf(await throttle.begin({ username: 'ALICE', address: '203.0.113.1' }))).to.be.within(1, 60);
  });

  it('given an attacker blocked on a name at one address, when the user logs in from another, then it is allowed', async () => {
    const throttle = loginThrottle(memoryLimiters, SETTINGS);
    expect(await fail(throttle, victim('203.0.113.66'), 300)).to.equal(5);
    await succeed(throttle, victim('198.51.100.7'));
  });

  it('given 300 parallel guesses, when they race, then only the allowed failures reach the password check', async () => {
    const throttle = loginThrottle(memoryLimiters, SETTINGS);
    const decisions = await Promise.all(Array.from({ length: 300 }, () => throttle.begin(victim('203.0.113.2'))));
    expect(decisions.filter((decision) => decision.allowed)).to.have.length(5);
  });

  it('given a success, when the streak restarts, then the pair has its full allowance again', async () => {
    const throttle = loginThrottle(memoryLimiters, SETTINGS);
    expect(await fail(throttle, victim('203.0.113.3'), 4)).to.equal(4);
    await succeed(throttle, victim('203.0.113.3'));
    expect(await fail(throttle, victim('203.0.113.3'), 6)).to.equal(5);
  });

  it('given one address trying many names, when over the per-address limit, then a fresh name from it is refused, not from elsewhere', async () => {
    const throttle = loginThrottle(memoryLimiters, SETTINGS);
    let allowed = 0;
    for (let index = 0; index < 40; index += 1) allowed += (await fail(throttle, { username: `user${index}`, address: '203.0.113.4' }, 1));
    expect(allowed).to.equal(20);
    expect(retryOf(await throttle.begin({ username: 'fresh', address: '203.0.113.4' }))).to.equal(900);
    await succeed(throttle, { username: 'fresh', address: '203.0.113.5' });
  });

  it('given many addresses guessing one name, when over the per-username limit, then new addresses are refused but a known one is not', async () => {
    const throttle = loginThrottle(memoryLimiters, SETTINGS);
    await succeed(throttle, victim('192.0.2.10'));
    // Timers get their turn: a known-address mark that expired at once would be gone now.
    await new Promise((resolve) => setTimeout(resolve, 50));
    let allowed = 0;
    for (let index = 0; index < 60; index += 1) allowed += await fail(throttle, victim(`10.0.${index}.1`), 1);
    expect(allowed).to.equal(50);
    expect(retryOf(await throttle.begin(victim('10.1.0.1')))).to.equal(900);
    await succeed(throttle, victim('192.0.2.10'));
  });

  it('given a refusal by a later limit, when counted, then the earlier limits get their point back', async () => {
    const throttle = loginThrottle(memoryLimiters, { ...SETTINGS, maxFailuresPerAddress: 1 });
    expect(await fail(throttle, { username: 'a', address: '203.0.113.6' }, 1)).to.equal(1);
    // Refused by the address limit many times: the (b, address) pair must not have counted them.
    expect(await fail(throttle, { username: 'b', address: '203.0.113.6' }, 10)).to.equal(0);
    const other = loginThrottle(memoryLimiters, { ...SETTINGS, maxFailuresPerAddress: 1000 });
    expect(await fail(other, { username: 'b', address: '203.0.113.6' }, 5)).to.equal(5);
  });

  it('given a block that ran out, when the pair fails again, then the next block is twice as long', async function () {
    this.timeout(60_000);
    const throttle = loginThrottle(memoryLimiters, { ...SETTINGS, perUserAddress: { maxFailures: 2, windowSeconds: 900, blockSeconds: 1, maxBlockSeconds: 3 } });
    const key = victim('203.0.113.7');
    expect(await fail(throttle, key, 2)).to.equal(2);
    expect(retryOf(await throttle.begin(key))).to.equal(1);
    await waitUntilAllowed(throttle, key);
    expect(await fail(throttle, key, 1)).to.equal(1);
    expect(retryOf(await throttle.begin(key))).to.equal(2);
    await waitUntilAllowed(throttle, key);
    expect(await fail(throttle, key, 1)).to.equal(1);
    // Capped at maxBlockSeconds.
    expect(retryOf(await throttle.begin(key))).to.equal(3);
  });
});

describe('failureThrottle (rate-limiter-flexible, memory)', () => {
  const rule = { maxFailures: 3, windowSeconds: 900, blockSeconds: 60, maxBlockSeconds: 3600 };

  it('given reset on success, when the owner succeeds, then the streak starts over', async () => {
    const throttle = failureThrottle(memoryLimiters, 'test-reset', rule, 'reset');
    expect(await fail(throttle, 'u1', 2)).to.equal(2);
    await succeed(throttle, 'u1');
    expect(await fail(throttle, 'u1', 4)).to.equal(3);
    expect(retryOf(await throttle.begin('u1'))).to.be.within(1, 60);
  });

  it('given release on success, when another client of the key succeeds, then earlier failures still count', async () => {
    const throttle = failureThrottle(memoryLimiters, 'test-release', rule, 'release');
    expect(await fail(throttle, 'addr', 2)).to.equal(2);
    await succeed(throttle, 'addr');
    expect(await fail(throttle, 'addr', 2)).to.equal(1);
  });
});
