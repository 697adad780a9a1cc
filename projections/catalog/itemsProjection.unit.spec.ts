import { expect } from 'chai';
import fc from 'fast-check';
import type { RecordedEvent } from '../../shared/event-store/EventStore.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { evolveOwned, itemsProjection } from './itemsProjection.ts';

const LAUI = '65a0000000000000000000d1';
let position = 0n;
const event = (type: string, data: Record<string, unknown>, revision: number): RecordedEvent => ({
  id: `e${revision}`,
  streamId: `item-${LAUI}`,
  revision,
  position: (position += 1n),
  type,
  data,
  metadata: { user_laui: null, correlation_id: 'c', causation_id: null, at: new Date(Date.UTC(2026, 0, 1, 0, 0, revision)).toISOString() },
  recordedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, revision)).toISOString(),
});
const created = (): ItemDoc =>
  itemsProjection.evolve(
    null,
    event('ItemCreated', { laui: LAUI, item_type: 'task', name: 't', parent_laui: null, is_root: false, access: { owners: {}, editors: {}, viewers: {} }, version: 1, fields: { state: 'scheduled', iteration: 0, config: { a: 1 } } }, 0),
  ) as ItemDoc;

/** A field change as JSON carries it: JSON.parse makes `__proto__` an own key, as a client's body would. */
const changeOf = (entries: Array<[string, unknown]>): Record<string, unknown> => JSON.parse(JSON.stringify(Object.fromEntries(entries)).replace('"proto_key"', '"__proto__"')) as Record<string, unknown>;

describe('itemsProjection.evolve and evolveOwned (issue 34: the as-of reader folds into a document of its own)', () => {
  it('given any sequence of field changes and other item events, when folded with evolveOwned into owned documents, then every step equals evolve: fields, values, key order and prototype', () => {
    const key = fc.constantFrom('state', 'iteration', 'name', 'config', 'updated_at', 'version', 'pk', 'new_field', 'other', 'proto_key', '0', '10');
    const value = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 3 }));
    const fieldChange = fc.record({ type: fc.constantFrom('ItemUpdated', 'TaskStarted', 'TaskSucceeded'), entries: fc.array(fc.tuple(key, value), { maxLength: 5 }) });
    const other = fc.record({ type: fc.constantFrom('ItemSoftDeleted', 'ItemRestored', 'ItemAccessChanged'), entries: fc.constant(null) });
    const step = fc.oneof({ weight: 6, arbitrary: fieldChange }, { weight: 1, arbitrary: other });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), (steps) => {
        let plain: ItemDoc | null = created();
        // The owned fold starts from a copy nobody else holds, as the reader's does after an evolve.
        let owned: ItemDoc | null = { ...plain };
        for (const [index, { type, entries }] of steps.entries()) {
          const data =
            entries !== null
              ? { changes: changeOf(entries), version: index + 2 }
              : type === 'ItemAccessChanged'
                ? { access: { owners: { x: 'y' }, editors: {}, viewers: {} } }
                : { at: '2026-01-02T00:00:00.000Z' };
          const next = event(type, data, index + 1);
          const given = JSON.stringify(plain);
          const evolved: ItemDoc | null = itemsProjection.evolve(plain, next);
          // evolve never changes the document it is given.
          expect(JSON.stringify(plain)).to.equal(given);
          plain = evolved;
          owned = evolveOwned(owned, next);
          expect(Object.keys(owned ?? {})).to.deep.equal(Object.keys(plain ?? {}));
          expect(JSON.stringify(owned)).to.equal(JSON.stringify(plain));
          expect(owned === null ? null : Object.getPrototypeOf(owned)).to.equal(plain === null ? null : Object.prototype);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('given a field change whose key is __proto__, when evolved either way, then it is an own field and the prototype is untouched', () => {
    const change = event('ItemUpdated', { changes: changeOf([['proto_key', { polluted: true }]]), version: 2 }, 1);
    for (const doc of [itemsProjection.evolve(created(), change), evolveOwned({ ...created() }, change)] as ItemDoc[]) {
      expect(Object.getPrototypeOf(doc)).to.equal(Object.prototype);
      expect(Object.keys(doc)).to.include('__proto__');
      expect((doc as Record<string, unknown> & { polluted?: unknown }).polluted).to.equal(undefined);
    }
  });

  it('given a document, when evolve folds a field change, then the document given is unchanged and a new one is returned; evolveOwned writes into the one given', () => {
    const doc = created();
    const text = JSON.stringify(doc);
    const change = event('TaskStarted', { changes: { state: 'running', iteration: 1 }, version: 2 }, 1);
    const next = itemsProjection.evolve(doc, change);
    expect(next).to.not.equal(doc);
    expect(JSON.stringify(doc)).to.equal(text);
    const owned = { ...doc };
    expect(evolveOwned(owned, change)).to.equal(owned);
    expect(owned.state).to.equal('running');
  });
});
