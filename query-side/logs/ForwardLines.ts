import type { FileHandle } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { MAX_LINE_BYTES } from './readLinesBackward.ts';

const BLOCK_BYTES = 64 * 1024;

/**
 * The complete lines of a file that grows, read forwards in blocks: each `read` goes from where
 * the last stopped to the current end of the file. A line still being written (no newline yet)
 * waits for the next read; a character split between blocks is decoded once whole. A line longer
 * than MAX_LINE_BYTES (counted in UTF-16 units, near enough) is dropped whole (a line of the session log is one JSON object: a part of one
 * could not be parsed anyway), so memory stays bounded whatever the file holds.
 */
export class ForwardLines {
  /** Bytes of the file read so far. */
  position = 0;
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';
  private skipping = false;
  private readonly block = Buffer.allocUnsafe(BLOCK_BYTES);

  /** Lines completed between the last read and the end of the file now, in order. */
  async *read(handle: FileHandle): AsyncGenerator<string> {
    for (;;) {
      const { bytesRead } = await handle.read(this.block, 0, BLOCK_BYTES, this.position);
      if (bytesRead === 0) return;
      this.position += bytesRead;
      const text = this.decoder.write(this.block.subarray(0, bytesRead));
      let start = 0;
      for (;;) {
        const newline = text.indexOf('\n', start);
        if (newline < 0) break;
        const line = this.partial === '' ? text.slice(start, newline) : this.partial + text.slice(start, newline);
        this.partial = '';
        start = newline + 1;
        if (this.skipping || line.length > MAX_LINE_BYTES) {
          this.skipping = false;
          continue;
        }
        if (line !== '' && line !== '\r') yield line.endsWith('\r') ? line.slice(0, -1) : line;
      }
      if (!this.skipping) this.partial += text.slice(start);
      if (this.partial.length > MAX_LINE_BYTES) {
        this.partial = '';
        this.skipping = true;
      }
    }
  }
}
