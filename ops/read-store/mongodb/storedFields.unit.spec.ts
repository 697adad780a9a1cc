import { expect } from 'chai';
import fc from 'fast-check';
import type { Doc } from '../../../shared/read-store/ReadStore.ts';
import { fromStored, storedName, toStored } from './storedFields.ts';

/** Every key of a stored value, at every depth, with whether it is at the top. */
const keysOf = (value: unknown, top = true): Array<[string, boolean]> => {
  if (Array.isArray(value)) return value.flatMap((item) => keysOf(item, false));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => [[key, top] as [string, boolean], ...keysOf(item, false)]);
};

const awkwardKey = fc.oneof(fc.string(), fc.constantFrom('_id', '$where', 'a.b', '%', '%2E', '%25', '\u0000', '.$', '$', 'id', '__proto__'));
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.string(), fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 3 }),
  object: fc.dictionary(awkwardKey, tie('value'), { maxKeys: 4 }),
})).value;

describe('storedFields', () => {
  it('given any JSON document with any keys, when stored and read back, then it is the same document', () => {
    fc.assert(
      fc.property(fc.string(), fc.dictionary(awkwardKey, jsonValue, { maxKeys: 6 }), (id, fields) => {
        const doc: Doc = { ...fields, id };
        expect(fromStored(toStored('c', doc))).to.deep.equal(doc);
      }),
    );
  });

  it('given any document, when stored, then no key has a dot, a leading $ or a NUL, and only the id is _id', () => {
    fc.assert(
      fc.property(fc.dictionary(awkwardKey, jsonValue, { maxKeys: 6 }), (fields) => {
        const stored = toStored('c', { ...fields, id: 'x' });
        expect(stored._id).to.equal('x');
        for (const [key, top] of keysOf(stored)) {
          expect(key.includes('.') || key.includes('\u0000') || key.startsWith('$')).to.equal(false);
          if (top && key === '_id') expect(stored[key]).to.equal('x');
        }
      }),
    );
  });

  it('given a document with plain keys, when stored, then its nested values are passed on without a copy', () => {
    const meta = { n: 1, list: [{ a: 1 }] };
    const stored = toStored('c', { id: 'x', meta });
    expect(stored.meta).to.equal(meta);
    expect(storedName('a.b')).to.equal('a%2Eb');
    expect(storedName('$x')).to.equal('%24x');
    expect(storedName('a$b')).to.equal('a$b');
  });

  it('given a document without a string id, when stored, then a TypeError names the collection', () => {
    expect(() => toStored('items', { id: 5 } as unknown as Doc)).to.throw(TypeError, /items/);
  });
});
