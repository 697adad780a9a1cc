import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serviceSustained } from './peerBench.ts';

/**
 * The peers' sustained load on an in-process service (16 clients, each running its own no-op task
 * again once it read `success`, reuse process), with a CPU profile of the main thread over the
 * counted window only (not the start-up): `npx tsx bench/profileSustained.ts [seconds] [out]`, then
 * `node bench/profileTop.mjs <out>` (issue 34: where the CPU per job goes). The clients share the
 * process: their frames (undici, bench/) are in the profile and named as such.
 */
const seconds = Number(process.argv[2] ?? 15);
const out = process.argv[3] ?? join(tmpdir(), `sustained-${Date.now()}.cpuprofile`);
const dir = mkdtempSync(join(tmpdir(), 'profile-sustained-'));
const session = new Session();
session.connect();
const sample = await serviceSustained(dir, seconds, {
  begin: async () => {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  },
  end: async () => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(out, JSON.stringify(profile));
  },
});
session.disconnect();
console.log(JSON.stringify({ figure: 'profile.sustained', seconds, ...sample, profile: out }));
rmSync(dir, { recursive: true, force: true });
process.exit(0);
