import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { eventHash, followedHash } from '../../shared/event-store/hashChain.ts';
import type { RawEnvelope } from '../../shared/event-store/verifyChain.ts';
import { fileSource, verifyLog } from './verifyLog.ts';

/** `count` raw envelopes chained from the genesis, as `events export --raw` writes them. */
const chained = (count: number): RawEnvelope[] => {
  const events: RawEnvelope[] = [];
  let previous: { position: bigint; hash: string | null } | null = null;
  for (let position = 1; position <= count; position += 1) {
    const fields = { stream: `s-${position % 7}`, revision: Math.floor(position / 7), type: 'Noted', version: 1, data: { position, text: 'é€😀' }, metadata: { at: 't', version: 1 } };
    const prev_hash = followedHash(previous);
    const hash = eventHash({ ...fields, position: BigInt(position), prev_hash });
    events.push({ position, ...fields, hash, prev_hash });
    previous = { position: BigInt(position), hash };
  }
  return events;
};

describe('verifyLog over an export file (events verify --file)', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'verify-log-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const exported = (events: RawEnvelope[], name: string, extra = ''): string => {
    const path = join(dir, name);
    writeFileSync(path, events.map((event) => `${JSON.stringify(event)}\n`).join('') + extra);
    return path;
  };

  it('given an export of 2,500 chained events, when verified, then it holds and the progress reaches the whole file in steps that never go back', async () => {
    const path = exported(chained(2500), 'whole.jsonl');
    const progress: Array<[number, number]> = [];
    const state = await verifyLog(fileSource(path), [], (done, total) => progress.push([done, total]));
    expect(state.failure).to.equal(null);
    expect(state.hashed).to.equal(2500);
    expect(progress.length).to.be.at.least(3);
    expect(progress.at(-1)?.[0]).to.equal(progress.at(-1)?.[1]);
    for (let index = 1; index < progress.length; index += 1) expect((progress[index] as [number, number])[0]).to.be.at.least((progress[index - 1] as [number, number])[0]);
  });

  it('given an export with one event edited, when verified, then the failure names its position', async () => {
    const events = chained(1500);
    events[1200] = { ...(events[1200] as RawEnvelope), type: 'Forged' };
    const state = await verifyLog(fileSource(exported(events, 'edited.jsonl')), []);
    expect(state.failure?.position).to.equal(1201);
  });

  it('given a file with a line that is not JSON, when verified, then it is refused naming the line', async () => {
    const path = exported(chained(3), 'broken.jsonl', 'not json\n');
    const refused = await verifyLog(fileSource(path), []).then(
      () => null,
      (error: unknown) => error,
    );
    expect(String(refused)).to.include(`${path}:4 is not JSON`);
  });
});
