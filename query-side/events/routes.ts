import Router from '@koa/router';
import { badRequest, forbidden, notFound } from '../../shared/errors.ts';
import { UnreadablePositionError, type EventStore } from '../../shared/event-store/EventStore.ts';
import type { EventChain } from '../../shared/event-store/EventChain.ts';
import { ed25519PublicKey, keyFingerprint } from '../../shared/event-store/checkpointSignature.ts';
import { parseChainQuery } from './chainQuery.ts';
import { principalOf, type AppContext, type AppState } from '../../shared/http/AppState.ts';
import { toEnvelope } from './eventEnvelope.ts';
import type { EventStreams } from './EventStreams.ts';
import { parseEventsQuery, resumePosition } from './eventsQuery.ts';
import { assertReadableFrom, readEventsPage } from './readEventsPage.ts';

/** The whole log is for administrators and auditors only: it shows every user's activity. */
const requireEventReader = (ctx: AppContext): void => {
  const principal = principalOf(ctx);
  if (!principal.isAdmin && !principal.isAuditor) throw forbidden();
};

/**
 * The raw log (GET /events/chain) holds what redaction hides (password hashes, sealed ciphertexts,
 * credential-named streams): administrators only, auditors verify an admin's export (docs/events.md).
 */
const requireAdmin = (ctx: AppContext): void => {
  if (!principalOf(ctx).isAdmin) throw forbidden('Access denied: administrators only');
};

const NO_CHAIN = 'This event store keeps no hash chain (KurrentDB; see docs/events.md)';

/** A position the store cannot read from is the client's mistake: 400 on every store, never a 500. */
const refusingUnreadable = async <T>(read: () => Promise<T>): Promise<T> => {
  try {
    return await read();
  } catch (error) {
    if (error instanceof UnreadablePositionError) throw badRequest(error.message);
    throw error;
  }
};

/** GET /api/v1/events (pages) and /api/v1/events/stream (Server-Sent Events), see docs/events.md. */
export const eventRoutes = (deps: {
  eventStore: EventStore;
  streams: EventStreams;
  /** The store's hash chain, null where it keeps none (KurrentDB): events are served with null hashes. */
  chain: EventChain | null;
  /** The checkpoints' Ed25519 public key (PEM, SPKI). */
  signingPublicKeyPem: string;
}): Router<AppState> => {
  const router = new Router<AppState>();
  const fingerprint = keyFingerprint(ed25519PublicKey(deps.signingPublicKeyPem));

  router.get('/api/v1/events', async (ctx) => {
    requireEventReader(ctx);
    const query = parseEventsQuery({ ...ctx.query });
    const page = await refusingUnreadable(() => readEventsPage(deps.eventStore, query));
    const links = deps.chain === null ? new Map() : await deps.chain.linksAt(page.events.map((event) => event.position));
    ctx.set('cache-control', 'no-store');
    ctx.body = {
      events: page.events.map((event) => ({ ...toEnvelope(event), hash: links.get(event.position)?.hash ?? null, prev_hash: links.get(event.position)?.prev_hash ?? null })),
      next_from: Number(page.nextFrom),
    };
  });

  router.get('/api/v1/events/chain', async (ctx) => {
    requireAdmin(ctx);
    const { from, limit } = parseChainQuery({ ...ctx.query });
    const chain = deps.chain;
    if (chain === null) throw notFound(NO_CHAIN);
    const events = await chain.readChain({ after: from, maxCount: limit });
    if (events.length === 0) await refusingUnreadable(() => assertReadableFrom(deps.eventStore, from));
    ctx.set('cache-control', 'no-store');
    // The head lets `events verify` show how far it has come.
    ctx.body = { events, next_from: events.at(-1)?.position ?? Number(from), head: Number(await deps.eventStore.headPosition()) };
  });

  router.get('/api/v1/events/checkpoints', async (ctx) => {
    requireEventReader(ctx);
    const { from, limit } = parseChainQuery({ ...ctx.query });
    if (deps.chain === null) throw notFound(NO_CHAIN);
    const checkpoints = await deps.chain.readCheckpoints(from, limit);
    ctx.set('cache-control', 'no-store');
    ctx.body = {
      algorithm: 'Ed25519',
      public_key: deps.signingPublicKeyPem,
      public_key_sha256: fingerprint,
      checkpoints,
      next_from: checkpoints.at(-1)?.position ?? Number(from),
    };
  });

  router.get('/api/v1/events/stream', async (ctx) => {
    requireEventReader(ctx);
    const query = parseEventsQuery({ ...ctx.query });
    const after = resumePosition(ctx.get('last-event-id') || undefined, query.from);
    await refusingUnreadable(() => assertReadableFrom(deps.eventStore, after));
    // A user past its share of streams (or a full server) gets a plain 429 (503) from serve, before any stream starts.
    deps.streams.serve(ctx.res, after, query, principalOf(ctx).laui);
    // The response is written by EventStreams from here on, not by Koa.
    ctx.respond = false;
  });

  return router;
};
