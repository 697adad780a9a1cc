import { chmodSync, createWriteStream, renameSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import type { EventChain } from '../../shared/event-store/EventChain.ts';
import type { Position } from '../../shared/event-store/EventStore.ts';

/**
 * `events export --raw`: the log as stored (neither upcast nor redacted), one raw envelope with its
 * hash and prev_hash per line, what `events verify --file` checks offline. It holds what redaction
 * hides (password hashes, sealed ciphertexts): mode 0600, for administrators and auditors only.
 * Written aside and renamed, like the other exports.
 */
export const exportRawChain = async (
  chain: EventChain,
  options: { from: Position; to: Position; out: string; onProgress?(done: number, total: number): void },
): Promise<{ events: number; last: Position }> => {
  const partial = `${options.out}.partial`;
  const file = createWriteStream(partial, { mode: 0o600 });
  const total = Number(options.to > options.from ? options.to - options.from : 0n);
  let events = 0;
  let last = options.from;
  try {
    while (last < options.to) {
      const page = (await chain.readChain({ after: last, maxCount: 1000 })).filter((event) => BigInt(event.position) <= options.to);
      if (page.length === 0) break;
      const chunk = page.map((event) => `${JSON.stringify(event)}\n`).join('');
      last = BigInt(page.at(-1)?.position ?? 0);
      events += page.length;
      if (!file.write(chunk)) await once(file, 'drain');
      options.onProgress?.(Number(last - options.from), total);
    }
    file.end();
    await once(file, 'close');
    chmodSync(partial, 0o600);
    renameSync(partial, options.out);
    return { events, last };
  } catch (error) {
    file.destroy();
    rmSync(partial, { force: true });
    throw error;
  }
};
