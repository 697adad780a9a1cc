import { createHash } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { canonicalJson } from './canonicalJson.ts';
import { chainAnchor, eventHash, followedHash, GENESIS_HASH, storedEventHasher, storedVersion } from './hashChain.ts';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('hashChain: the hash of an event and what it follows', () => {
  it('given the documented anchor, when computed, then it is SHA-256 of the JCS of {anchor, position}, position 0 being the genesis', () => {
    expect(chainAnchor(41)).to.equal(sha256('{"anchor":"pipeline-orchestrator/event-log/v1","position":41}'));
    expect(GENESIS_HASH).to.equal(sha256('{"anchor":"pipeline-orchestrator/event-log/v1","position":0}'));
  });

  it('given an event, when hashed, then the hash is SHA-256 of the JCS of its eight fields, as an auditor would recompute it', () => {
    const fields = { position: 7n, stream: 'item-1', revision: 0, type: 'ItemCreated', version: 1, data: { b: 1, a: 'x' }, metadata: { version: 1, at: 't' }, prev_hash: GENESIS_HASH };
    const text = `{"data":{"a":"x","b":1},"metadata":{"at":"t","version":1},"position":7,"prev_hash":"${GENESIS_HASH}","revision":0,"stream":"item-1","type":"ItemCreated","version":1}`;
    expect(eventHash(fields)).to.equal(sha256(text));
  });

  it('given what came before, when asked what the next event follows, then: the genesis, the hash, or the anchor of a hashless event', () => {
    expect(followedHash(null)).to.equal(GENESIS_HASH);
    expect(followedHash({ position: 3n, hash: 'ab' })).to.equal('ab');
    expect(followedHash({ position: 3n, hash: null })).to.equal(chainAnchor(3));
  });

  it('given stored JSON texts, when the writer hashes them, then the hash is eventHash of the parsed values (any data, any metadata)', () => {
    const hasher = storedEventHasher();
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
        fc.string(),
        fc.string(),
        fc.bigInt({ min: 1n, max: 2n ** 53n }),
        fc.nat(),
        (data, version, stream, type, position, revision) => {
          const metadata = { user_laui: null, at: '2026-01-01T00:00:00.000Z', ...(version === undefined ? {} : { version }) };
          const dataJson = JSON.stringify(data);
          const stored = { position, stream, revision, type, data: dataJson, metadata: JSON.stringify(metadata), prevHash: GENESIS_HASH };
          const expected = eventHash({ position, stream, revision, type, version: storedVersion(metadata), data: JSON.parse(dataJson), metadata, prev_hash: GENESIS_HASH });
          expect(hasher(stored)).to.equal(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('given metadata without a version, when the version is read, then it is 1, as upcasting reads it', () => {
    expect(storedVersion({})).to.equal(1);
    expect(storedVersion({ version: 2 })).to.equal(2);
    expect(storedVersion({ version: 'x' })).to.equal(1);
  });

  it('given the canonical text of a hash input, when compared with JSON.stringify of its keys sorted, then they agree (the member order the writer uses)', () => {
    const fields = { version: 1, type: 't', stream: 's', revision: 0, prev_hash: 'p', position: 1, metadata: {}, data: {} };
    expect(Object.keys(JSON.parse(canonicalJson(fields)) as object)).to.deep.equal(['data', 'metadata', 'position', 'prev_hash', 'revision', 'stream', 'type', 'version']);
  });
});
