import { RetryLaterError, TooManyRequestsError } from '../errors.ts';
import { clientAddress } from './clientAddress.ts';
import type { AppState } from './AppState.ts';

/** Who holds a long-lived stream: a signed-in user (from any address), or an anonymous client address. */
export type StreamHolder = { user: string } | { address: string };

/**
 * How the streams of one kind (the logs routes' SSE, the event stream) are shared out. Each stream
 * holds a file handle or a store subscription and a buffer for as long as the client keeps it open:
 * without a share per client, one client opening streams in a loop takes every slot and everyone
 * else is refused.
 */
export interface StreamShareSettings {
  /** Streams of this kind open at once, all clients together. */
  total: number;
  /** Streams one signed-in user may hold at once (from any number of addresses). */
  perUser: number;
  /**
   * Anonymous clients (the public logs routes): the streams one address may hold (an IPv6 client
   * by its /64, see clientAddress), and all anonymous clients together, which leaves the rest of
   * `total` to signed-in users however many addresses an attacker has. Absent: no anonymous holder
   * is admitted (the event stream needs a token before it gets here).
   */
  anonymous?: { perAddress: number; total: number };
}

/** How long a refused client is told to wait before it tries again (Retry-After, seconds). */
const RETRY_AFTER_SECONDS = 5;

/**
 * The streams of one kind, counted per holder. `admit` takes a slot or refuses before anything is
 * written: 429 `Too many open <what>` when the client holds its share (its own streams are in the
 * way: it should close one), 503 when the server as a whole (or the anonymous part of it) has no
 * slot left (nothing the client did; try later). Both carry Retry-After.
 */
export class StreamShares {
  private open = 0;
  private openAnonymous = 0;
  private readonly held = new Map<string, number>();

  constructor(
    private readonly settings: StreamShareSettings,
    /** The streams' name in refusals: `log streams`, `event streams`. */
    private readonly what: string,
  ) {}

  /** Streams open now. */
  get size(): number {
    return this.open;
  }

  /** Takes a slot for `holder` and returns its release (idempotent), or throws the refusal. */
  admit(holder: StreamHolder): () => void {
    const anonymous = 'address' in holder;
    const key = anonymous ? `address:${holder.address}` : `user:${holder.user}`;
    const share = anonymous ? (this.settings.anonymous?.perAddress ?? 0) : this.settings.perUser;
    const mine = this.held.get(key) ?? 0;
    if (mine >= share) throw new TooManyRequestsError(RETRY_AFTER_SECONDS, `Too many open ${this.what}`);
    if (this.open >= this.settings.total || (anonymous && this.openAnonymous >= (this.settings.anonymous?.total ?? 0))) {
      throw new RetryLaterError(503, RETRY_AFTER_SECONDS, `No ${this.what} free on the server; try again later`);
    }
    this.open += 1;
    if (anonymous) this.openAnonymous += 1;
    this.held.set(key, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open -= 1;
      if (anonymous) this.openAnonymous -= 1;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }
}

/** The holder of a request's stream: its user when it is signed in, else its client address. */
export const streamHolderOf = (ctx: { state: AppState; ip: string }): StreamHolder =>
  ctx.state.principal ? { user: ctx.state.principal.laui } : { address: clientAddress(ctx.ip) };
