import { expect } from 'chai';
import type { LoadResult, LoadSpec } from './loadGenerator.ts';
import { runInterleaved } from './runInterleaved.ts';

/** A load that records what it was asked to run and answers with canned latencies. */
const fakeLoad = (latenciesOf: (spec: LoadSpec) => number[]) => {
  const calls: Array<{ url: string; seconds: number; body?: string }> = [];
  const load = async (spec: LoadSpec): Promise<LoadResult> => {
    calls.push({ url: spec.url, seconds: spec.seconds, ...(spec.bodyTemplate ? { body: spec.bodyTemplate } : {}) });
    const latencies = latenciesOf(spec);
    return {
      requests: latencies.length,
      errors: 0,
      seconds: spec.seconds,
      perSecond: latencies.length / spec.seconds,
      p50: NaN,
      p99: NaN,
      ...(spec.keepLatencies ? { latencies: Float64Array.from(latencies).sort() } : {}),
    };
  };
  return { load, calls };
};

const spec = (url: string) => (round: number) => ({ url, method: 'POST' as const, headers: {}, bodyTemplate: `round ${round}`, concurrency: 1 });

describe('runInterleaved (bench)', () => {
  it('given a baseline and a subject, when run in 4 rounds, then both warm up first and the rounds alternate ABBA', async () => {
    // Given
    const { load, calls } = fakeLoad(() => [1]);

    // When
    await runInterleaved({ baseline: spec('bare'), subject: spec('service'), seconds: 8, rounds: 4, warmupSeconds: 3 }, load);

    // Then
    expect(calls.map((call) => `${call.url}:${call.body}:${call.seconds}`)).to.deep.equal([
      'bare:round -1:3',
      'service:round -1:3',
      'bare:round 0:2',
      'service:round 0:2',
      'service:round 1:2',
      'bare:round 1:2',
      'bare:round 2:2',
      'service:round 2:2',
      'service:round 3:2',
      'bare:round 3:2',
    ]);
  });

  it('given rounds of different speed, when figures are made, then throughput and percentiles cover every measured round and none of the warm-up', async () => {
    // Given: the warm-up is slow (latency 100), measured rounds answer 10 then 30 requests
    let measured = 0;
    const { load } = fakeLoad((spec) => {
      if (!spec.keepLatencies) return [100];
      measured += 1;
      return measured % 2 === 1 ? Array.from({ length: 10 }, () => 5) : Array.from({ length: 30 }, (_, index) => 1 + index / 100);
    });

    // When
    const { subject, baseline } = await runInterleaved({ baseline: spec('bare'), subject: spec('service'), seconds: 4, rounds: 2, warmupSeconds: 1 }, load);

    // Then: the subject ran rounds 0 (2nd call: 30 requests) and 1 (3rd call: 10 requests)
    expect(subject.requests).to.equal(40);
    expect(subject.seconds).to.equal(4);
    expect(subject.perSecond).to.equal(10);
    expect(subject.rounds).to.deep.equal([15, 5]);
    expect(subject.p50).to.equal(1.2);
    expect(subject.p99).to.equal(5);
    expect(baseline.requests).to.equal(40);
    expect(Math.max(subject.p99, baseline.p99)).to.be.below(100);
  });
});
