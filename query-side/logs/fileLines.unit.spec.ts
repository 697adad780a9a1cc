import { expect } from 'chai';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForwardLines } from './ForwardLines.ts';
import { readLinesBackward } from './readLinesBackward.ts';

describe('reading log files by lines, in blocks', () => {
  let dir: string;
  let handles: FileHandle[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'log-lines-'));
  });
  afterEach(async () => {
    await Promise.all(handles.map((handle) => handle.close()));
    handles = [];
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A file with `text`, opened; reads counted (bytes asked for). */
  const fileWith = async (name: string, text: string | Buffer): Promise<{ handle: FileHandle; path: string; size: number; bytesRead: () => number }> => {
    const path = join(dir, name);
    writeFileSync(path, text);
    const handle = await open(path, 'r');
    handles.push(handle);
    let total = 0;
    const read = handle.read.bind(handle) as (buffer: Buffer, offset: number, length: number, position: number) => Promise<{ bytesRead: number; buffer: Buffer }>;
    const counting = new Proxy(handle, {
      get(target, key) {
        if (key === 'read') {
          return async (buffer: Buffer, offset: number, length: number, position: number) => {
            const result = await read(buffer, offset, length, position);
            total += result.bytesRead;
            return result;
          };
        }
        const value = Reflect.get(target, key) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    return { handle: counting, path, size: Buffer.byteLength(text), bytesRead: () => total };
  };

  const backwards = async (handle: FileHandle, size: number, options: { blockBytes?: number; maxLineBytes?: number } = {}): Promise<string[]> => {
    const lines: string[] = [];
    for await (const line of readLinesBackward(handle, size, options)) lines.push(line);
    return lines;
  };

  describe('readLinesBackward', () => {
    it('given lines longer than a block, when read backwards in 7-byte blocks, then every line whole, last first', async () => {
      const text = 'first line\nsecond, a longer line\n\nthird\r\nx\nfinal without newline';
      const { handle, size } = await fileWith('a.jsonl', text);
      expect(await backwards(handle, size, { blockBytes: 7 })).to.deep.equal(['final without newline', 'x', 'third', 'second, a longer line', 'first line']);
      for (const blockBytes of [1, 2, 3, 64, 65536]) {
        expect(await backwards(handle, size, { blockBytes }), `block ${blockBytes}`).to.deep.equal(['final without newline', 'x', 'third', 'second, a longer line', 'first line']);
      }
    });

    it('given multi-byte characters split across blocks, when read, then they are decoded whole', async () => {
      const text = 'ein Käse\n日本語のログ\n✓ done\n';
      const { handle, size } = await fileWith('b.jsonl', text);
      for (const blockBytes of [1, 2, 4, 5]) expect(await backwards(handle, size, { blockBytes })).to.deep.equal(['✓ done', '日本語のログ', 'ein Käse']);
    });

    it('given an empty file or only newlines, when read, then no lines', async () => {
      const empty = await fileWith('c.jsonl', '');
      expect(await backwards(empty.handle, empty.size)).to.deep.equal([]);
      const blank = await fileWith('d.jsonl', '\n\n\r\n\n');
      expect(await backwards(blank.handle, blank.size, { blockBytes: 2 })).to.deep.equal([]);
    });

    it('given a large file, when only the last lines are taken, then only the blocks holding them are read', async () => {
      const lines = Array.from({ length: 100_000 }, (_, index) => `{"n":${index}}`);
      const { handle, size, bytesRead } = await fileWith('e.jsonl', `${lines.join('\n')}\n`);
      const taken: string[] = [];
      for await (const line of readLinesBackward(handle, size, { blockBytes: 4096 })) {
        taken.push(line);
        if (taken.length === 10) break;
      }
      expect(taken).to.deep.equal(lines.slice(-10).reverse());
      expect(bytesRead()).to.equal(4096);
      expect(size).to.be.greaterThan(1_000_000);
    });

    it('given a line longer than the bound, when read, then it is cut to its first bytes and the lines around it are whole', async () => {
      const long = `START${'x'.repeat(1000)}END`;
      const { handle, size } = await fileWith('f.jsonl', `before\n${long}\nafter\n`);
      expect(await backwards(handle, size, { blockBytes: 16, maxLineBytes: 100 })).to.deep.equal(['after', long.slice(0, 100), 'before']);
    });

    it('given an end short of the file size, when read, then the lines of the first `end` bytes only (a file that grew since)', async () => {
      const { handle } = await fileWith('g.jsonl', 'one\ntwo\n');
      appendFileSync(join(dir, 'g.jsonl'), 'three\n');
      expect(await backwards(handle, 8, { blockBytes: 3 })).to.deep.equal(['two', 'one']);
    });
  });

  describe('ForwardLines', () => {
    const forwards = async (lines: ForwardLines, handle: FileHandle): Promise<string[]> => {
      const found: string[] = [];
      for await (const line of lines.read(handle)) found.push(line);
      return found;
    };

    it('given a file that grows, when read again, then each read gives the lines completed since, a line being written waits for its newline', async () => {
      const { handle, path } = await fileWith('h.jsonl', 'one\ntw');
      const lines = new ForwardLines();
      expect(await forwards(lines, handle)).to.deep.equal(['one']);
      expect(await forwards(lines, handle)).to.deep.equal([]);
      appendFileSync(path, 'o\r\n\nthr');
      expect(await forwards(lines, handle)).to.deep.equal(['two']);
      appendFileSync(path, 'ee\n');
      expect(await forwards(lines, handle)).to.deep.equal(['three']);
      expect(lines.position).to.equal(Buffer.byteLength('one\ntwo\r\n\nthree\n'));
    });

    it('given a character split between two writes, when read in between, then it is decoded whole once complete', async () => {
      const bytes = Buffer.from('日本\n');
      const { handle, path } = await fileWith('i.jsonl', bytes.subarray(0, 4));
      const lines = new ForwardLines();
      expect(await forwards(lines, handle)).to.deep.equal([]);
      appendFileSync(path, bytes.subarray(4));
      expect(await forwards(lines, handle)).to.deep.equal(['日本']);
    });

    it('given a line over the bound, when read, then it is dropped whole and the next lines are read', async () => {
      const { handle } = await fileWith('j.jsonl', `a\n${'y'.repeat(1024 * 1024 + 10)}\nb\n`);
      expect(await forwards(new ForwardLines(), handle)).to.deep.equal(['a', 'b']);
    });
  });
});
