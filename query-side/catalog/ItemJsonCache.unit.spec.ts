import { expect } from 'chai';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { ItemJson, ItemJsonCache, listingJson } from './ItemJsonCache.ts';
import { itemView } from './itemView.ts';

const doc = (laui: string, version: number): ItemDoc =>
  ({ id: laui, laui, item_type: 'payload', name: `n-${laui}`, version, is_deleted: false, created_seq: 1, content: { version } }) as unknown as ItemDoc;

describe('ItemJsonCache', () => {
  it('given a cached item, when the store holds a new document for it, then its JSON is made again from the new one', () => {
    // Given
    const cache = new ItemJsonCache(10);
    const first = doc('a', 1);
    expect(JSON.parse(cache.json(first))).to.deep.equal(itemView(first));

    // When
    const second = doc('a', 2);
    const json = cache.json(second);

    // Then
    expect(JSON.parse(json)).to.deep.equal(itemView(second));
    expect(JSON.parse(cache.json(second))).to.include({ version: 2 });
    expect(cache.size).to.equal(1);
  });

  it('given a capacity of 2, when 3 items are read, then 2 entries are kept and every answer is still its own item', () => {
    // Given
    const cache = new ItemJsonCache(2);

    // When
    const answers = ['a', 'b', 'c', 'a'].map((laui) => JSON.parse(cache.json(doc(laui, 1))) as { laui: string });

    // Then
    expect(answers.map((answer) => answer.laui)).to.deep.equal(['a', 'b', 'c', 'a']);
    expect(cache.size).to.equal(2);
  });

  it('given bookkeeping fields on the document, when serialised, then they stay out as in itemView', () => {
    // Given / When
    const json = JSON.parse(new ItemJsonCache(1).json(doc('a', 1))) as Record<string, unknown>;

    // Then
    expect(json).to.not.have.any.keys('id', 'is_deleted', 'created_seq');
    expect(json).to.include({ laui: 'a', version: 1 });
  });

  it('given a listing of cached texts and plain views (unicode, nested values, a null page token), when written, then it is byte for byte what JSON.stringify of the views gives', () => {
    // Given
    const cache = new ItemJsonCache(10);
    const docs = [doc('a', 1), { ...doc('b', 2), name: 'naïve \u2028 "quoted" ✓', content: { list: [1, { deep: null }], empty: {} } } as unknown as ItemDoc];
    const pagination = { current_page: 1, per_page: 50, has_next: false, next_page_token: null };
    const views = docs.map((one) => itemView(one));

    // When
    const written = listingJson({ items: [new ItemJson(cache.json(docs[0] as ItemDoc)), views[1], new ItemJson(cache.json(docs[1] as ItemDoc))], pagination });

    // Then
    expect(written).to.equal(JSON.stringify({ items: [views[0], views[1], views[1]], pagination }));
    expect(JSON.stringify({ items: [new ItemJson(cache.json(docs[0] as ItemDoc))] }), 'serialised another way: the view itself').to.equal(JSON.stringify({ items: [views[0]] }));
  });
});
