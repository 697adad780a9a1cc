import { expect } from 'chai';
import { decimalValue, hexBytesToBase64, integerValue, timestampFromMicros, timestampValue } from './cloudValues.ts';

describe('Warehouse text values made JSON-safe', () => {
  it('given integers, when converted, then numbers while exact and text beyond 2^53', () => {
    expect(integerValue('42')).to.equal(42);
    expect(integerValue('9007199254740993')).to.equal('9007199254740993');
  });

  it('given decimals, when converted, then numbers up to 15 digits of precision, text beyond', () => {
    expect(decimalValue('12.50', 10)).to.equal(12.5);
    expect(decimalValue('12345678901234567890.5', 38)).to.equal('12345678901234567890.5');
  });

  it('given timestamps, when converted, then ISO 8601 instants (no zone read as UTC)', () => {
    expect(timestampValue('2024-05-01 10:00:00.123')).to.equal('2024-05-01T10:00:00.123Z');
    expect(timestampValue('2024-05-01 10:00:00.123 UTC')).to.equal('2024-05-01T10:00:00.123Z');
    expect(timestampValue('2024-05-01 12:00:00+02')).to.equal('2024-05-01T10:00:00.000Z');
    expect(timestampValue('not a time')).to.equal('not a time');
    expect(timestampFromMicros('1714557600123456')).to.equal('2024-05-01T10:00:00.123456Z');
    expect(timestampFromMicros('-1')).to.equal('1969-12-31T23:59:59.999999Z');
  });

  it('given Athena varbinary text, when converted, then base64', () => {
    expect(hexBytesToBase64('68 65 6c 6c 6f')).to.equal('aGVsbG8=');
  });
});
