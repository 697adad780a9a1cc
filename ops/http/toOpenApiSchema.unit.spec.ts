import { expect } from 'chai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { toOpenApiSchema, type SchemaContext } from './toOpenApiSchema.ts';

const nothingNamed: SchemaContext = { refOf: () => undefined };
const naming = (named: Map<object, string>): SchemaContext => ({ refOf: (schema) => named.get(schema) });

describe('toOpenApiSchema (an ajv draft-07 schema in an OpenAPI 3.1 document)', () => {
  it('given a plain schema, when converted, then it is kept keyword for keyword in a new tree', () => {
    const schema = { type: 'object', properties: { name: { type: 'string', minLength: 1 }, tags: { type: 'array', items: { type: 'string' } } }, required: ['name'] };
    const converted = toOpenApiSchema(schema, nothingNamed);
    expect(converted).to.deep.equal(schema);
    expect(converted).to.not.equal(schema);
    expect((converted as { properties: object }).properties).to.not.equal(schema.properties);
  });

  it('given $schema and $id, when converted, then both are dropped (one dialect; no re-based refs)', () => {
    const converted = toOpenApiSchema({ $schema: 'http://json-schema.org/draft-07/schema#', $id: 'https://x/y.json', type: 'string' }, nothingNamed);
    expect(converted).to.deep.equal({ type: 'string' });
  });

  it('given definitions and local refs in a named component, when converted, then they become $defs and refs rebased on its place', () => {
    const schema = {
      type: 'object',
      definitions: { id: { type: 'string', pattern: '^[0-9a-f]{24}$' } },
      properties: { laui: { $ref: '#/definitions/id' }, again: { $ref: '#/$defs/id' }, self: { $ref: '#' } },
    };
    const converted = toOpenApiSchema(schema, nothingNamed, '#/components/schemas/Thing');
    expect(converted).to.deep.equal({
      type: 'object',
      $defs: { id: { type: 'string', pattern: '^[0-9a-f]{24}$' } },
      properties: {
        laui: { $ref: '#/components/schemas/Thing/$defs/id' },
        again: { $ref: '#/components/schemas/Thing/$defs/id' },
        self: { $ref: '#/components/schemas/Thing' },
      },
    });
  });

  it('given a local ref in a schema with no place in the document, when converted, then it is refused (it would resolve elsewhere)', () => {
    expect(() => toOpenApiSchema({ definitions: { a: { type: 'string' } }, $ref: '#/definitions/a' }, nothingNamed)).to.throw(/named component/);
  });

  it('given nullable (OpenAPI 3.0), when converted, then null joins the type and the keyword goes', () => {
    expect(toOpenApiSchema({ type: 'string', nullable: true }, nothingNamed)).to.deep.equal({ type: ['string', 'null'] });
    expect(toOpenApiSchema({ type: ['integer', 'null'], nullable: true }, nothingNamed)).to.deep.equal({ type: ['integer', 'null'] });
    expect(toOpenApiSchema({ enum: ['a'], nullable: false }, nothingNamed)).to.deep.equal({ enum: ['a'] });
  });

  it('given a draft-07 tuple, when converted, then items becomes prefixItems and additionalItems becomes items', () => {
    const converted = toOpenApiSchema({ type: 'array', items: [{ type: 'string' }, { type: 'integer' }], additionalItems: false }, nothingNamed);
    expect(converted).to.deep.equal({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false });
  });

  it('given additionalItems beside a single items schema, when converted, then it is dropped (draft-07 ignores it there)', () => {
    expect(toOpenApiSchema({ type: 'array', items: { type: 'string' }, additionalItems: false }, nothingNamed)).to.deep.equal({ type: 'array', items: { type: 'string' } });
  });

  it('given dependencies, when converted, then lists become dependentRequired and schemas dependentSchemas', () => {
    const converted = toOpenApiSchema({ type: 'object', dependencies: { a: ['b'], c: { required: ['d'] } } }, nothingNamed);
    expect(converted).to.deep.equal({ type: 'object', dependentRequired: { a: ['b'] }, dependentSchemas: { c: { required: ['d'] } } });
  });

  it('given properties named like keywords, when converted, then they stay properties', () => {
    const schema = { type: 'object', properties: { nullable: { type: 'boolean' }, items: { type: 'array' }, $id: { type: 'string' }, definitions: { type: 'object' } } };
    expect(toOpenApiSchema(schema, nothingNamed)).to.deep.equal(schema);
  });

  it('given an object the document names, when it appears, then it is a $ref, except where the component itself is defined', () => {
    const laui = { type: 'string', pattern: '^[0-9a-f]{24}$' };
    const context = naming(new Map([[laui, '#/components/schemas/ObjectId']]));
    const body = { type: 'object', properties: { item_laui: laui, parent_laui: { ...laui }, list: { type: 'array', items: laui } }, anyOf: [laui] };
    expect(toOpenApiSchema(body, context)).to.deep.equal({
      type: 'object',
      properties: { item_laui: { $ref: '#/components/schemas/ObjectId' }, parent_laui: laui, list: { type: 'array', items: { $ref: '#/components/schemas/ObjectId' } } },
      anyOf: [{ $ref: '#/components/schemas/ObjectId' }],
    });
    expect(toOpenApiSchema(laui, context, '#/components/schemas/ObjectId')).to.deep.equal(laui);
    expect(toOpenApiSchema(laui, context)).to.deep.equal({ $ref: '#/components/schemas/ObjectId' });
  });

  it('given boolean schemas and frozen input, when converted, then booleans stay and the input is untouched', () => {
    const schema = Object.freeze({ type: 'object', properties: Object.freeze({ any: true, none: false }), additionalProperties: false, default: Object.freeze({ a: [1] }) });
    const before = JSON.stringify(schema);
    const converted = toOpenApiSchema(schema, nothingNamed) as { default: { a: number[] } };
    expect(JSON.stringify(schema)).to.equal(before);
    expect(converted).to.deep.equal(JSON.parse(before));
    expect(converted.default).to.not.equal(schema.default);
  });

  it('given a value that is no schema, when converted, then it is refused with the value named', () => {
    expect(() => toOpenApiSchema({ type: 'object', properties: { a: 'string' } }, nothingNamed)).to.throw(/Not a JSON Schema: "string"/);
  });

  it('given draft-07 schemas that use every converted keyword, when converted, then a 2020-12 validator accepts the same values', () => {
    const draft07 = {
      type: 'object',
      definitions: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }], minItems: 2, additionalItems: false } },
      properties: { pair: { $ref: '#/definitions/pair' }, note: { type: 'string', nullable: true } },
      dependencies: { note: ['pair'] },
    };
    const validate = new Ajv2020({ strict: true, allowUnionTypes: true }).compile(toOpenApiSchema(draft07, nothingNamed, '#') as object);
    expect(validate({ pair: ['a', 1], note: null })).to.equal(true);
    expect(validate({ pair: ['a', 1, 2] })).to.equal(false);
    expect(validate({ note: 'x' })).to.equal(false);
    expect(validate({ pair: ['a', 'b'] })).to.equal(false);
  });
});
