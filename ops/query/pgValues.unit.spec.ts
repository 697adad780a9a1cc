import { expect } from 'chai';
import { isoTimestamp, parsePgArray, pgTypeParser } from './pgValues.ts';

describe('PostgreSQL values as the query endpoint answers them (pgValues)', () => {
  it('given timestamps in ISO DateStyle, when converted, then ISO 8601 with Z for UTC, the offset otherwise, none without a zone', () => {
    expect(isoTimestamp('2024-05-01 10:00:00.123456+00')).to.equal('2024-05-01T10:00:00.123456Z');
    expect(isoTimestamp('2024-05-01 10:00:00+05:30')).to.equal('2024-05-01T10:00:00+05:30');
    expect(isoTimestamp('2024-05-01 10:00:00-08')).to.equal('2024-05-01T10:00:00-08:00');
    expect(isoTimestamp('1900-01-01 00:00:00+00:09:21')).to.equal('1900-01-01T00:00:00+00:09:21');
    expect(isoTimestamp('2024-05-01 10:00:00')).to.equal('2024-05-01T10:00:00');
    expect(isoTimestamp('infinity')).to.equal('infinity');
    expect(isoTimestamp('0044-03-15 12:00:00+00 BC')).to.equal('0044-03-15 12:00:00+00 BC');
  });

  it('given array texts, when parsed, then nested arrays with NULLs, quoted elements and bounds handled', () => {
    expect(parsePgArray('{1,NULL,3}', Number)).to.deep.equal([1, null, 3]);
    expect(parsePgArray('{{1,2},{3,4}}', Number)).to.deep.equal([[1, 2], [3, 4]]);
    expect(parsePgArray('{"a,b","c\\"d","NULL",""}', String)).to.deep.equal(['a,b', 'c"d', 'NULL', '']);
    expect(parsePgArray('[0:1]={7,8}', Number)).to.deep.equal([7, 8]);
    expect(parsePgArray('{}', Number)).to.deep.equal([]);
  });

  it('given type oids, when their parser runs, then numbers, exact big values as strings, base64 bytes, parsed JSON and text otherwise', () => {
    expect(pgTypeParser(20)('9007199254740991')).to.equal(9_007_199_254_740_991);
    expect(pgTypeParser(20)('9007199254740993')).to.equal('9007199254740993');
    expect(pgTypeParser(1700)('1234567890.123456789')).to.equal('1234567890.123456789');
    expect(pgTypeParser(701)('-Infinity')).to.equal('-Infinity');
    expect(pgTypeParser(16)('f')).to.equal(false);
    expect(pgTypeParser(17)('\\x00ff')).to.equal('AP8=');
    expect(pgTypeParser(3802)('{"a": [1, null]}')).to.deep.equal({ a: [1, null] });
    expect(pgTypeParser(1016)('{1,9007199254740993}')).to.deep.equal([1, '9007199254740993']);
    expect(pgTypeParser(1185)('{"2024-05-01 10:00:00+00"}')).to.deep.equal(['2024-05-01T10:00:00Z']);
    expect(pgTypeParser(2950)('5f2b...')).to.equal('5f2b...');
  });

  it('given texts a type parser cannot read (a hostile server) or that were cut at the bound, when parsed, then the text comes back and nothing throws', () => {
    expect(pgTypeParser(3802)('{"a": [1')).to.equal('{"a": [1');
    expect(pgTypeParser(20)('twelve')).to.equal('twelve');
    expect(pgTypeParser(1016)('{1,x}')).to.equal('{1,x}');
    const cut = `{"a": "${'x'.repeat(10)}…[value cut: 600000000 bytes]`;
    expect(pgTypeParser(3802)(cut)).to.equal(cut);
    expect(pgTypeParser(17)('\\x00ff…[value cut: 600000000 bytes]')).to.equal('\\x00ff…[value cut: 600000000 bytes]');
  });
});
