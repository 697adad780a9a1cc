import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serviceSustained } from './peerBench.ts';

/**
 * What the service allocates per job under the peers' sustained load (16 clients, each running its
 * own no-op task again once it read `success`, reuse process), from V8's sampling heap profiler over
 * the counted window, counting the objects the collector took as well (without them the profile
 * holds only what is still alive at its end): `npx tsx bench/profileAllocations.ts [seconds] [out]`,
 * then `node bench/allocationTop.mjs <out>` for the allocating functions. Bytes per job move far
 * less from run to run than jobs/s do, so a cut of a few percent shows here first (issue 34).
 */
const seconds = Number(process.argv[2] ?? 10);
const out = process.argv[3] ?? join(tmpdir(), `allocations-${Date.now()}.heapprofile`);
const SAMPLING_INTERVAL_BYTES = 4096;
const dir = mkdtempSync(join(tmpdir(), 'profile-allocations-'));
const session = new Session();
session.connect();
let sampledBytes = 0;
const sample = await serviceSustained(dir, seconds, {
  begin: async () => {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: SAMPLING_INTERVAL_BYTES,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  },
  end: async () => {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    writeFileSync(out, JSON.stringify(profile));
    type Node = { selfSize: number; children: Node[] };
    const total = (node: Node): number => node.children.reduce((sum, child) => sum + total(child), node.selfSize);
    sampledBytes = total(profile.head as Node);
  },
});
session.disconnect();
const jobs = sample.jobsPerSecond * seconds;
// The profiler samples every ~SAMPLING_INTERVAL_BYTES and scales each sample to the bytes it stands for.
console.log(JSON.stringify({ figure: 'profile.allocations', seconds, ...sample, kb_per_job: Number((sampledBytes / 1024 / Math.max(jobs, 1)).toFixed(1)), profile: out }));
rmSync(dir, { recursive: true, force: true });
process.exit(0);
