import { expect } from 'chai';
import { BoundedLineReader, CappedLog, TailBuffer } from './boundedOutput.ts';

describe('bounded output buffers', () => {
  it('given lines split across chunks, when pushed, then whole lines come out in order', () => {
    const lines: string[] = [];
    const reader = new BoundedLineReader(100, (line) => lines.push(line), () => expect.fail('no overflow expected'));
    reader.push(Buffer.from('{"a":1}\n{"b"'));
    reader.push(Buffer.from(':2}\n{"c":3}\n'));
    expect(lines).to.deep.equal(['{"a":1}', '{"b":2}', '{"c":3}']);
  });

  it('given an unfinished line longer than the cap, when pushed, then overflow is reported once and nothing more is read', () => {
    const lines: string[] = [];
    const overflows: number[] = [];
    const reader = new BoundedLineReader(10, (line) => lines.push(line), (bytes) => overflows.push(bytes));
    reader.push(Buffer.from('12345'));
    reader.push(Buffer.from('678901'));
    reader.push(Buffer.from('\nlater\n'));
    expect(overflows).to.deep.equal([11]);
    expect(lines).to.deep.equal([]);
  });

  it('given code output past the cap, when appended, then the head is kept, the rest counted and overflow fires once', () => {
    let overflows = 0;
    const log = new CappedLog(10, () => (overflows += 1));
    log.append('install', Buffer.from('inst\n'));
    log.append('code', Buffer.from('0123456789'));
    log.append('code', Buffer.from('more'));
    expect(overflows).to.equal(1);
    expect(log.truncated).to.equal(true);
    expect(log.text()).to.equal('inst\n01234\n[output truncated: 9 bytes over the limit of 10]');
  });

  it('given install output past the cap, when appended, then it is truncated without counting against the code', () => {
    let overflows = 0;
    const log = new CappedLog(4, () => (overflows += 1));
    log.append('install', Buffer.from('0123456789'));
    log.append('code', Buffer.from('ab'));
    expect(overflows).to.equal(0);
    expect(log.text()).to.equal('0123\n[output truncated: 8 bytes over the limit of 4]');
  });

  it('given more bytes than its size, when appended, then the tail keeps the last bytes', () => {
    const tail = new TailBuffer(5);
    tail.append(Buffer.from('abc'));
    tail.append(Buffer.from('defgh'));
    expect(tail.text()).to.equal('defgh');
  });
});
