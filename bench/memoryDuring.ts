import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A full GC, also without --expose-gc (npm run bench does not pass it). */
export const collectGarbage = (): void => {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
};

/**
 * Peak RSS and heap growth of this process while `work` runs, against what it held just before
 * (after a full GC; `settleMs` first lets what an earlier step started wind down). Sampled every
 * 5 ms and once more at the end.
 */
export const memoryDuring = async <T>(work: () => Promise<T>, options: { settleMs?: number } = {}): Promise<{ result: T; rssGrowthMb: number; heapGrowthMb: number }> => {
  if (options.settleMs) await new Promise((resolve) => setTimeout(resolve, options.settleMs));
  collectGarbage();
  const before = process.memoryUsage();
  let peakRss = before.rss;
  let peakHeap = before.heapUsed;
  const sample = () => {
    const now = process.memoryUsage();
    peakRss = Math.max(peakRss, now.rss);
    peakHeap = Math.max(peakHeap, now.heapUsed);
  };
  const sampler = setInterval(sample, 5);
  try {
    const result = await work();
    sample();
    const mb = (bytes: number) => Number((bytes / 1024 / 1024).toFixed(1));
    return { result, rssGrowthMb: mb(peakRss - before.rss), heapGrowthMb: mb(peakHeap - before.heapUsed) };
  } finally {
    clearInterval(sampler);
  }
};
