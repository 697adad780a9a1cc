import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { KeyObject } from 'node:crypto';
import type { EventChain } from '../../shared/event-store/EventChain.ts';
import { checkpointSignedBy, type SignedCheckpoint } from '../../shared/event-store/checkpointSignature.ts';
import { finishVerification, startVerification, verifyNext, type ChainVerification, type RawEnvelope } from '../../shared/event-store/verifyChain.ts';

/** Pages of the log in position order, and how far along they are (for the progress bar). */
export interface ChainSource {
  pages(): AsyncIterable<RawEnvelope[]>;
  /** The whole's size and how much of it the pages so far covered, in the source's unit (positions, bytes). */
  progress(): { done: number; total: number };
}

const PAGE = 1000;

/** The log in DATA_DIR (or any store's chain), up to its head at the start. */
export const chainSource = (chain: EventChain, head: bigint): ChainSource => {
  let done = 0;
  return {
    async *pages() {
      let after = 0n;
      while (after < head) {
        const page = (await chain.readChain({ after, maxCount: PAGE })).filter((event) => BigInt(event.position) <= head);
        if (page.length === 0) return;
        after = BigInt((page.at(-1) as RawEnvelope).position);
        done = Number(after);
        yield page;
      }
    },
    progress: () => ({ done, total: Number(head) }),
  };
};

/** A running service's log: GET /api/v1/events/chain page after page, as an administrator. */
export const serviceSource = (baseUrl: string, token: string): ChainSource => {
  let done = 0;
  let total = 0;
  return {
    async *pages() {
      let from = 0;
      for (;;) {
        const answer = (await getJson(baseUrl, `/api/v1/events/chain?from=${from}&limit=${PAGE}`, token)) as { events: RawEnvelope[]; next_from: number; head: number };
        total = answer.head;
        if (answer.events.length === 0) return;
        from = answer.next_from;
        done = from;
        yield answer.events;
      }
    },
    progress: () => ({ done, total }),
  };
};

/** An export file (`events export --raw`): one raw envelope per line. */
export const fileSource = (path: string): ChainSource => {
  const total = statSync(path).size;
  let done = 0;
  return {
    async *pages() {
      const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
      let page: RawEnvelope[] = [];
      let lineNumber = 0;
      for await (const line of lines) {
        lineNumber += 1;
        done += Buffer.byteLength(line, 'utf8') + 1;
        if (line.trim() === '') continue;
        try {
          page.push(JSON.parse(line) as RawEnvelope);
        } catch {
          throw new Error(`${path}:${lineNumber} is not JSON: give a file written by events export --raw`);
        }
        if (page.length === PAGE) {
          yield page;
          page = [];
        }
      }
      if (page.length > 0) yield page;
    },
    progress: () => ({ done: Math.min(done, total), total }),
  };
};

export const getJson = async (baseUrl: string, path: string, token: string): Promise<unknown> => {
  const reply = await fetch(new URL(path, baseUrl), { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  const text = await reply.text();
  if (!reply.ok) throw new Error(`GET ${path}: ${reply.status} ${text}`);
  return JSON.parse(text) as unknown;
};

/** The checkpoints whose signature the key does not verify: the first names the position to report. */
export const unsignedCheckpoint = (checkpoints: ReadonlyArray<SignedCheckpoint>, publicKey: KeyObject): SignedCheckpoint | undefined =>
  checkpoints.find((checkpoint) => !checkpointSignedBy(checkpoint, publicKey));

/**
 * Folds the source's events through the verifier (shared/event-store/verifyChain.ts), stopping at
 * the first event that does not follow; the checkpoints (their signatures checked by the caller)
 * must each match the chain at their position.
 */
export const verifyLog = async (source: ChainSource, checkpoints: ReadonlyArray<SignedCheckpoint>, onProgress?: (done: number, total: number) => void): Promise<ChainVerification> => {
  let state = startVerification(checkpoints);
  for await (const page of source.pages()) {
    for (const event of page) {
      state = verifyNext(state, event);
      if (state.failure) return state;
    }
    const { done, total } = source.progress();
    onProgress?.(done, total);
  }
  return finishVerification(state);
};
