import { expect } from 'chai';
import type { Doc } from '../../shared/read-store/ReadStore.ts';
import { decodeChunkHead, decodeDocuments, encodeChunk } from './snapshotChunk.ts';

/** A chunk through the head a load reads, then its documents as the first access decodes them. */
const roundTrip = (docs: Doc[]): Doc[] => decodeDocuments(decodeChunkHead(encodeChunk(docs)));

const encodeDocumentsWithoutSharing = (docs: Doc[]): number => JSON.stringify(docs).length;

describe('snapshot chunks of documents', () => {
  const folder = '6a0000000000000000000001';
  const items = (count: number): Doc[] =>
    Array.from({ length: count }, (_, index) => ({
      id: `i${index}`,
      laui: `i${index}`,
      parent_laui: folder,
      name: `p-${index}`,
      access: { owners: {}, editors: {}, viewers: {} },
      tag: index % 2 ? '{"a":1}' : { a: 1 },
      odd: index % 3 ? null : 'x',
      created_seq: index,
    }));

  it('given documents with repeated values, an id repeated and mixed types, when encoded and decoded, then they come back equal, in order and with their keys in order', () => {
    const docs = items(100);
    const decoded = roundTrip(docs);
    expect(decoded).to.deep.equal(docs);
    expect(decoded.map((doc) => Object.keys(doc))).to.deep.equal(docs.map((doc) => Object.keys(doc)));
  });

  it('given repeated values, when decoded, then the documents share one string or object each instead of copies, and the encoding is smaller', () => {
    const docs = items(100);
    const body = encodeChunk(docs);
    const decoded = decodeDocuments(decodeChunkHead(body));
    expect(decoded[1]?.access).to.equal(decoded[2]?.access);
    expect(decoded[0]?.laui).to.equal(decoded[0]?.id);
    // The string and the object of the same JSON text stay apart.
    expect(decoded[0]?.tag).to.deep.equal({ a: 1 });
    expect(decoded[1]?.tag).to.equal('{"a":1}');
    expect(body.length).to.be.below(encodeDocumentsWithoutSharing(docs));
  });

  it('given text outside ASCII (accents, an emoji, a lone surrogate), when encoded, then the body is ASCII and it decodes back to the same text', () => {
    const docs: Doc[] = [{ id: 'é', name: 'café 😀 \ud800', nested: { 'clé': ['ü'] } }, { id: 'b', name: 'plain' }];
    const body = encodeChunk(docs);
    expect([...body.subarray(4)].every((byte) => byte < 0x80)).to.equal(true);
    expect(roundTrip(docs)).to.deep.equal(docs);
  });

  it('given a chunk written as UTF-8 (format 2), when decoded, then it is refused rather than misread as latin1', () => {
    expect(() => decodeDocuments({ documents: Buffer.from(JSON.stringify([{ id: 'a', name: 'café' }]), 'utf8'), shared: [] })).to.throw(/outside ASCII/);
    const head = Buffer.from(JSON.stringify([['é'], []]), 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(head.length);
    expect(() => decodeChunkHead(Buffer.concat([length, head, Buffer.from('[]')]))).to.throw(/outside ASCII/);
  });

  it('given no document, or a body of another shape, when decoded, then nothing comes back or it throws', () => {
    expect(roundTrip([])).to.deep.equal([]);
    expect(() => decodeChunkHead(Buffer.from('not a chunk'))).to.throw();
    expect(() => decodeDocuments({ documents: Buffer.from('{}'), shared: [] })).to.throw(/another shape/);
  });

  it('given a chunk, when its head is read, then it lists the ids in order and the values of its shared fields, without decoding the documents', () => {
    const docs = items(10);
    const head = decodeChunkHead(encodeChunk(docs));
    expect(head.ids).to.deep.equal(docs.map((doc) => doc.id));
    expect(new Map(head.shared).get('parent_laui')).to.deep.equal([folder]);
    expect(new Map(head.shared).get('laui'), 'a field equal to the id').to.equal(null);
    expect(new Map(head.shared).has('name'), 'values that mostly differ').to.equal(false);
  });
});
