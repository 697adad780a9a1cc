import { expect } from 'chai';
import { AppError } from '../errors.ts';
import { validateRequest, validatorOf } from './validateRequest.ts';

const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', pattern: '^[a-z]+$' },
    action: { type: 'string', enum: ['START', 'STOP'] },
    count: { type: 'integer', minimum: 1 },
  },
  required: ['name', 'action'],
  additionalProperties: false,
} as const;

const failure = (value: unknown): AppError => {
  try {
    validateRequest(schema, value);
  } catch (error) {
    if (error instanceof AppError) return error;
  }
  throw new Error('expected validation to fail');
};

describe('validateRequest', () => {
  it('given a valid body, when validated, then it is returned unchanged', () => {
    expect(validateRequest(schema, { name: 'abc', action: 'STOP' })).to.deep.equal({ name: 'abc', action: 'STOP' });
  });

  it('given missing fields, when validated, then a 422 lists one missing entry per field', () => {
    const error = failure({});
    expect(error.status).to.equal(422);
    expect(error.detail).to.deep.equal([
      { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} },
      { type: 'missing', loc: ['body', 'action'], msg: 'Field required', input: {} },
    ]);
  });

  it('given a wrong enum value, an extra key and a bad pattern, when validated, then each is reported with its location', () => {
    const error = failure({ name: 'ABC', action: 'start', extra: 1 });
    const entries = error.detail as Array<Record<string, unknown>>;
    expect(entries.map((entry) => entry.type)).to.have.members(['string_pattern_mismatch', 'enum', 'extra_forbidden']);
    const enumEntry = entries.find((entry) => entry.type === 'enum');
    expect(enumEntry?.loc).to.deep.equal(['body', 'action']);
    expect(enumEntry?.msg).to.equal("Input should be 'START' or 'STOP'");
    expect(entries.find((entry) => entry.type === 'extra_forbidden')?.loc).to.deep.equal(['body', 'extra']);
  });

  it('given a string where an integer belongs, when validated, then an int_type entry carries the input', () => {
    const error = failure({ name: 'a', action: 'STOP', count: '3' });
    expect(error.detail).to.deep.equal([{ type: 'int_type', loc: ['body', 'count'], msg: 'Input should be a valid integer', input: '3' }]);
  });

  it('given a schema written inline (a new object per request), when validating twice, then one compiled validator serves both', () => {
    // Given
    const inline = () => ({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] });
    // When
    const first = validatorOf(inline());
    const second = validatorOf(inline());
    // Then
    expect(second).to.equal(first);
    expect(validateRequest<{ n: number }>(inline(), { n: 1 })).to.deep.equal({ n: 1 });
  });

  it('given two different schemas, when validating, then each keeps its own validator', () => {
    // Given / When
    const integers = validatorOf({ type: 'object', properties: { n: { type: 'integer' } } });
    const strings = validatorOf({ type: 'object', properties: { n: { type: 'string' } } });
    // Then
    expect(integers).to.not.equal(strings);
    expect(() => validateRequest({ type: 'object', properties: { n: { type: 'string' } } }, { n: 1 })).to.throw();
  });
});
