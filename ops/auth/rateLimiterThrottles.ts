import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { AttemptThrottle, LoginAttempt, ThrottleDecision } from '../../shared/ports/AttemptThrottle.ts';

/**
 * Where the counters live. The embedded mode keeps them in the process (RateLimiterMemory); a
 * distributed deployment with several API processes passes a factory of shared-store limiters
 * (RateLimiterRedis, RateLimiterPostgres, ...: the same rate-limiter-flexible interface), so that an
 * attacker cannot multiply the limits by the number of processes. Counters are not events: they are
 * short-lived, and a restart forgetting them costs an attacker's rate nothing worth a log.
 */
export type LimiterFactory = (options: { keyPrefix: string; points: number; duration: number }) => RateLimiterAbstract;

export const memoryLimiters: LimiterFactory = (options) => new RateLimiterMemory(options);

export interface FailureRule {
  /** Failures allowed within the window; the next attempt is refused and starts a block. */
  maxFailures: number;
  /** How long failures are remembered. */
  windowSeconds: number;
  /** The first block; each further block of the same key (within a day) lasts twice the last. */
  blockSeconds: number;
  maxBlockSeconds: number;
}

export interface LoginThrottleSettings {
  /** Per (username, address): consecutive failures, with a growing block; a success resets it. */
  perUserAddress: FailureRule;
  /** Per address across usernames (password spraying); blocks for one window. */
  maxFailuresPerAddress: number;
  /**
   * Per username across addresses (a guessing botnet); blocks for one window, but not the addresses
   * this user has logged in from successfully within knownAddressSeconds.
   */
  maxFailuresPerUsername: number;
  knownAddressSeconds: number;
}

/** How long a key's past blocks count towards the next block's length. */
const BLOCK_MEMORY_SECONDS = 24 * 3600;

/** One counter: reserve() counts an attempt, release() gives it back, reset() forgets the key. */
class FailureLimit {
  private readonly failures: RateLimiterAbstract;
  private readonly blocks: RateLimiterAbstract;

  constructor(
    limiters: LimiterFactory,
    name: string,
    private readonly rule: FailureRule,
  ) {
    this.failures = limiters({ keyPrefix: `${name}-failures`, points: rule.maxFailures, duration: rule.windowSeconds });
    this.blocks = limiters({ keyPrefix: `${name}-blocks`, points: Number.MAX_SAFE_INTEGER, duration: BLOCK_MEMORY_SECONDS });
  }

  /** Counts the attempt: null when allowed, else the seconds to wait. */
  async reserve(key: string): Promise<number | null> {
    try {
      await this.failures.consume(key);
      return null;
    } catch (rejected) {
      if (!(rejected instanceof RateLimiterRes)) throw rejected;
      // The first attempt over the limit starts a block; attempts during it are refused as they come.
      if (rejected.consumedPoints !== this.rule.maxFailures + 1) return Math.max(1, Math.ceil(rejected.msBeforeNext / 1000));
      const blocksSoFar = (await this.blocks.penalty(key)).consumedPoints;
      const seconds = Math.min(this.rule.blockSeconds * 2 ** Math.min(blocksSoFar - 1, 30), this.rule.maxBlockSeconds);
      await this.failures.block(key, seconds);
      return seconds;
    }
  }

  async release(key: string): Promise<void> {
    await this.failures.reward(key);
  }

  async reset(key: string): Promise<void> {
    await Promise.all([this.failures.delete(key), this.blocks.delete(key)]);
  }
}

const refused = (retryAfterSeconds: number): ThrottleDecision => ({ allowed: false, retryAfterSeconds });

/**
 * Failed logins, three ways, so that an attacker at one address cannot lock the real user out at
 * another: the (username, address) pair blocks after a few consecutive failures, for longer each
 * time; the address blocks after many failures across usernames; the username blocks only after
 * far more failures across addresses, and never for addresses the user has logged in from. Blocked
 * attempts reach no password check and count nowhere else, so one address never trips the
 * username's limit.
 */
export const loginThrottle = (limiters: LimiterFactory, settings: LoginThrottleSettings): AttemptThrottle<LoginAttempt> => {
  const window = settings.perUserAddress.windowSeconds;
  const pairs = new FailureLimit(limiters, 'login-pair', settings.perUserAddress);
  const addresses = new FailureLimit(limiters, 'login-address', {
    maxFailures: settings.maxFailuresPerAddress,
    windowSeconds: window,
    blockSeconds: window,
    maxBlockSeconds: window,
  });
  const usernames = new FailureLimit(limiters, 'login-username', {
    maxFailures: settings.maxFailuresPerUsername,
    windowSeconds: window,
    blockSeconds: window,
    maxBlockSeconds: window,
  });
  const known = limiters({ keyPrefix: 'login-known', points: 1, duration: settings.knownAddressSeconds });
  return {
    async begin({ username, address }) {
      // Names are case-insensitive, and no real one is longer than 64 characters: bounded keys.
      const name = username.toLowerCase().slice(0, 128);
      const pair = `${address} ${name}`;
      const pairWait = await pairs.reserve(pair);
      if (pairWait !== null) return refused(pairWait);
      const addressWait = await addresses.reserve(address);
      if (addressWait !== null) {
        await pairs.release(pair);
        return refused(addressWait);
      }
      const fromKnownAddress = (await known.get(pair)) !== null;
      if (!fromKnownAddress) {
        const nameWait = await usernames.reserve(name);
        if (nameWait !== null) {
          await Promise.all([pairs.release(pair), addresses.release(address)]);
          return refused(nameWait);
        }
      }
      return {
        allowed: true,
        async succeeded() {
          await Promise.all([
            pairs.reset(pair),
            addresses.release(address),
            fromKnownAddress ? undefined : usernames.release(name),
            known.set(pair, 1, settings.knownAddressSeconds),
          ]);
        },
      };
    },
  };
};

/**
 * One key's failures (a user's change-password attempts, an address's failed token grants), with
 * the growing block of FailureRule. `onSuccess`: `reset` ends the streak (only the key's owner can
 * succeed), `release` just does not count the attempt (a shared key: another's success must not
 * wipe an attacker's count).
 */
export const failureThrottle = (
  limiters: LimiterFactory,
  name: string,
  rule: FailureRule,
  onSuccess: 'reset' | 'release',
): AttemptThrottle<string> => {
  const limit = new FailureLimit(limiters, name, rule);
  return {
    async begin(key) {
      const wait = await limit.reserve(key);
      if (wait !== null) return refused(wait);
      return { allowed: true, succeeded: () => (onSuccess === 'reset' ? limit.reset(key) : limit.release(key)) };
    },
  };
};

/**
 * A plain rate: at most `points` attempts per key within `durationSeconds`, successful or not (the
 * sign-in mails to one address: each one lands in an inbox). `succeeded` gives nothing back.
 */
export const rateThrottle = (limiters: LimiterFactory, name: string, points: number, durationSeconds: number): AttemptThrottle<string> => {
  const limiter = limiters({ keyPrefix: name, points, duration: durationSeconds });
  return {
    async begin(key) {
      try {
        await limiter.consume(key);
      } catch (rejected) {
        if (!(rejected instanceof RateLimiterRes)) throw rejected;
        return refused(Math.max(1, Math.ceil(rejected.msBeforeNext / 1000)));
      }
      return { allowed: true, succeeded: async () => undefined };
    },
  };
};
