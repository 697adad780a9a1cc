import { expect } from 'chai';
import fc from 'fast-check';
import { cutMarker } from '../../shared/query/answerBudget.ts';
import { MysqlWireGuard } from './mysqlWireGuard.ts';
import { PgWireGuard, PG_MESSAGE_CAP } from './pgWireGuard.ts';
import { splitCut, utf8Prefix, type WireGuard, type WireGuardEvents } from './wireGuard.ts';

/** What a guard handed on and told, for `bytes` fed in the given chunk sizes. */
const run = (make: (deliver: (chunk: Buffer) => void, events: WireGuardEvents) => WireGuard, bytes: Buffer, sizes: number[] = [bytes.length]) => {
  const out: Buffer[] = [];
  const told = { cuts: 0, failures: [] as Error[] };
  const guard = make((chunk) => out.push(Buffer.from(chunk)), { onCut: () => (told.cuts += 1), onFailure: (error) => told.failures.push(error) });
  let at = 0;
  for (let index = 0; at < bytes.length; index += 1) {
    const size = Math.max(1, sizes[index % sizes.length] ?? bytes.length);
    guard.feed(bytes.subarray(at, at + size));
    at += size;
  }
  return { out: Buffer.concat(out), ...told };
};

const chunkSizes = fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 });

// PostgreSQL backend messages.
const message = (type: string, body: Buffer): Buffer => {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
};
const dataRow = (values: Array<string | null>): Buffer => {
  const count = Buffer.alloc(2);
  count.writeUInt16BE(values.length);
  const parts = values.map((value) => {
    const length = Buffer.alloc(4);
    if (value === null) {
      length.writeInt32BE(-1);
      return length;
    }
    const bytes = Buffer.from(value, 'utf8');
    length.writeInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  });
  return message('D', Buffer.concat([count, ...parts]));
};
const errorResponse = (fields: Array<[string, string]>): Buffer =>
  message('E', Buffer.concat([...fields.map(([code, text]) => Buffer.concat([Buffer.from(code, 'latin1'), Buffer.from(text, 'utf8'), Buffer.from([0])])), Buffer.from([0])]));
const commandComplete = message('C', Buffer.from('SELECT 1\0', 'latin1'));
const readyForQuery = message('Z', Buffer.from('I', 'latin1'));

/** The values of the DataRow messages in `bytes` (and the types of all messages). */
const readPg = (bytes: Buffer): { types: string; rows: Array<Array<string | null>> } => {
  let at = 0;
  let types = '';
  const rows: Array<Array<string | null>> = [];
  while (at < bytes.length) {
    const type = String.fromCharCode(bytes[at] as number);
    const length = bytes.readUInt32BE(at + 1);
    types += type;
    if (type === 'D') {
      let index = at + 5;
      const count = bytes.readUInt16BE(index);
      index += 2;
      const row: Array<string | null> = [];
      for (let field = 0; field < count; field += 1) {
        const size = bytes.readInt32BE(index);
        index += 4;
        row.push(size === -1 ? null : bytes.subarray(index, index + size).toString('utf8'));
        index += Math.max(0, size);
      }
      expect(index).to.equal(at + 1 + length);
      rows.push(row);
    }
    at += 1 + length;
  }
  expect(at).to.equal(bytes.length);
  return { types, rows };
};

const pgGuard = (cap: number) => (deliver: (chunk: Buffer) => void, events: WireGuardEvents) => new PgWireGuard(cap, deliver, events);

describe('wire guards (the driver never builds a value larger than the bound)', () => {
  it('given UTF-8 cut anywhere, when trimmed, then no half character is left', () => {
    const text = Buffer.from('aé€😀', 'utf8');
    for (let end = 0; end <= text.length; end += 1) expect(() => new TextDecoder('utf-8', { fatal: true }).decode(utf8Prefix(text.subarray(0, end)))).to.not.throw();
  });

  describe('PostgreSQL (PgWireGuard)', () => {
    it('given messages within their bounds in any chunking, when fed, then the driver gets exactly the same bytes', () => {
      fc.assert(
        fc.property(fc.array(fc.oneof(fc.string({ maxLength: 30 }), fc.constant(null)), { maxLength: 4 }), chunkSizes, (values, sizes) => {
          const stream = Buffer.concat([dataRow(values), dataRow(['a']), errorResponse([['S', 'ERROR'], ['M', 'boom']]), commandComplete, readyForQuery]);
          const result = run(pgGuard(100), stream, sizes);
          expect(result.out.equals(stream)).to.equal(true);
          expect([result.cuts, result.failures.length]).to.deep.equal([0, 0]);
        }),
        { numRuns: 300 },
      );
    });

    it('given a row larger than the bound in any chunking, when fed, then its values are cut with the marker, nothing after it is handed on, and onCut is told once', () => {
      fc.assert(
        fc.property(chunkSizes, (sizes) => {
          const big = 'é'.repeat(200);
          const stream = Buffer.concat([dataRow(['first']), dataRow(['7', big, null, 'after']), dataRow(['never']), commandComplete, readyForQuery]);
          const result = run(pgGuard(100), stream, sizes);
          const read = readPg(result.out);
          expect(read.types).to.equal('DD');
          const [, cut] = read.rows as [unknown, Array<string | null>];
          expect(cut[0]).to.equal('7');
          expect(cut[1]).to.match(/^(é)+…\[value cut: 400 bytes\]$/);
          expect(Buffer.byteLength((cut[1] as string).replace(cutMarker(400), ''))).to.be.at.most(99);
          expect(cut[2]).to.equal(null);
          expect(cut[3]).to.equal(cutMarker(5));
          expect([result.cuts, result.failures.length]).to.deep.equal([1, 0]);
        }),
        { numRuns: 200 },
      );
    });

    it('given an error or notice larger than 64 KiB, when fed, then its texts are cut and the session goes on', () => {
      const stream = Buffer.concat([errorResponse([['S', 'ERROR'], ['M', `invalid input: ${'x'.repeat(200_000)}`], ['D', 'detail']]), readyForQuery]);
      const result = run(pgGuard(100), stream, [4096]);
      expect(result.out.length).to.be.below(70 * 1024);
      expect(result.out.includes(Buffer.from(cutMarker(200_015)))).to.equal(true);
      expect(result.out.subarray(-6).equals(readyForQuery)).to.equal(true);
      expect([result.cuts, result.failures.length]).to.deep.equal([0, 0]);
    });

    it('given another message larger than 1 MiB, or a malformed length, when fed, then the request fails and nothing more is handed on', () => {
      const huge = message('S', Buffer.alloc(PG_MESSAGE_CAP + 1, 0x61));
      const result = run(pgGuard(100), Buffer.concat([readyForQuery, huge, readyForQuery]), [65_536]);
      // What came before the failure in the same chunk may be dropped too: the request is failing.
      expect(result.out.length).to.be.at.most(readyForQuery.length);
      expect(result.failures.map((error) => error.message)).to.deep.equal([`The target sent a protocol message of ${PG_MESSAGE_CAP + 1} bytes (type S); the service reads at most ${PG_MESSAGE_CAP} bytes of it`]);
      expect(run(pgGuard(100), Buffer.from([0x5a, 0, 0, 0, 2])).failures).to.have.length(1);
    });

    it('given a driver that throws on the bytes, when fed, then the throw becomes onFailure and never leaves feed', () => {
      const failures: Error[] = [];
      const guard = new PgWireGuard(100, () => {
        throw new RangeError('Cannot create a string longer than 0x1fffffe8 characters');
      }, { onCut: () => undefined, onFailure: (error) => failures.push(error) });
      expect(() => guard.feed(readyForQuery)).to.not.throw();
      expect(failures.map((error) => error.message)).to.deep.equal(['Cannot create a string longer than 0x1fffffe8 characters']);
      expect(guard.stopped).to.equal(true);
    });
  });

  describe('MySQL / MariaDB (MysqlWireGuard)', () => {
    const packet = (payload: Buffer, sequence: number): Buffer => Buffer.concat([Buffer.from([payload.length & 0xff, (payload.length >> 8) & 0xff, payload.length >> 16, sequence]), payload]);
    const lengthEncoded = (value: string | null): Buffer => {
      if (value === null) return Buffer.from([0xfb]);
      const bytes = Buffer.from(value, 'utf8');
      const prefix = bytes.length < 0xfb ? Buffer.from([bytes.length]) : Buffer.from([0xfc, bytes.length & 0xff, bytes.length >> 8]);
      return Buffer.concat([prefix, bytes]);
    };
    const row = (values: Array<string | null>, sequence: number): Buffer => packet(Buffer.concat(values.map(lengthEncoded)), sequence);
    const eof = packet(Buffer.from([0xfe, 0, 0, 2, 0]), 9);
    const mysqlGuard = (cap: number) => (deliver: (chunk: Buffer) => void, events: WireGuardEvents) => new MysqlWireGuard(cap, deliver, events);
    /** The values of a single-packet row. */
    const values = (bytes: Buffer): Array<string | null> => {
      const size = bytes.readUIntLE(0, 3);
      const out: Array<string | null> = [];
      let at = 4;
      while (at < 4 + size) {
        const first = bytes[at] as number;
        if (first === 0xfb) {
          out.push(null);
          at += 1;
          continue;
        }
        const [length, width] = first < 0xfb ? [first, 1] : [bytes.readUInt16LE(at + 1), 3];
        out.push(bytes.subarray(at + width, at + width + length).toString('utf8'));
        at += width + length;
      }
      expect(at).to.equal(4 + size);
      return out;
    };

    it('given packets within the bound in any chunking, when fed, then mysql2 gets exactly the same bytes', () => {
      fc.assert(
        fc.property(fc.array(fc.oneof(fc.string({ maxLength: 20 }), fc.constant(null)), { maxLength: 4 }), chunkSizes, (fields, sizes) => {
          const stream = Buffer.concat([row(fields, 3), row(['x'], 4), eof]);
          const result = run(mysqlGuard(100), stream, sizes);
          expect(result.out.equals(stream)).to.equal(true);
          expect([result.cuts, result.failures.length]).to.deep.equal([0, 0]);
        }),
        { numRuns: 300 },
      );
    });

    it('given a row larger than the bound in any chunking, when fed, then it is rebuilt with its values cut (keeping its sequence id) and the read ends', () => {
      fc.assert(
        fc.property(chunkSizes, (sizes) => {
          const stream = Buffer.concat([row(['first'], 3), row(['7', 'ü'.repeat(300), null, 'after'], 4), row(['never'], 5), eof]);
          const result = run(mysqlGuard(100), stream, sizes);
          const first = row(['first'], 3);
          expect(result.out.subarray(0, first.length).equals(first)).to.equal(true);
          const rebuilt = result.out.subarray(first.length);
          expect(rebuilt[3]).to.equal(4);
          const cut = values(rebuilt);
          expect(cut[0]).to.equal('7');
          expect(cut[1]).to.match(/^(ü)+…\[value cut: 600 bytes\]$/);
          expect(cut.slice(2)).to.deep.equal([null, cutMarker(5)]);
          expect([result.cuts, result.failures.length]).to.deep.equal([1, 0]);
        }),
        { numRuns: 200 },
      );
    });

    it('given a row in several 16 MiB parts within the bound, when fed, then the parts go through unchanged', () => {
      const value = 'v'.repeat(0xffffff + 100);
      const payload = Buffer.concat([Buffer.from([0xfd, value.length & 0xff, (value.length >> 8) & 0xff, value.length >> 16]), Buffer.from(value)]);
      const parts = Buffer.concat([packet(payload.subarray(0, 0xffffff), 3), packet(payload.subarray(0xffffff), 4), eof]);
      const result = run(mysqlGuard(32 * 1024 * 1024), parts, [65_536]);
      expect(result.out.equals(parts)).to.equal(true);
      expect(result.cuts).to.equal(0);
    });

    it('given a binary value the guard cut, when split, then the kept bytes and the marker come apart', () => {
      const cut = Buffer.concat([Buffer.from([0, 1, 255]), Buffer.from(cutMarker(123))]);
      expect(splitCut(cut)).to.deep.equal({ kept: Buffer.from([0, 1, 255]), marker: cutMarker(123) });
      expect(splitCut(Buffer.from('plain'))).to.equal(null);
    });
  });
});
