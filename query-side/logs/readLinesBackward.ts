import type { FileHandle } from 'node:fs/promises';

const NEWLINE = 0x0a;
/** Bytes read per step backwards. */
export const BACKWARD_BLOCK_BYTES = 64 * 1024;
/**
 * The longest line handed out whole; a longer one is cut to its first this-many bytes. Memory stays
 * bounded by it whatever the file holds (one line of gigabytes, a file with no newline at all).
 */
export const MAX_LINE_BYTES = 1024 * 1024;

/**
 * The lines of the first `end` bytes of a file, last line first, read backwards in blocks: paging
 * from the end of a large file reads only the blocks holding the lines asked for, never the whole
 * file. Empty lines are skipped; a `\r` ending a line is dropped. The consumer stops the reading by
 * stopping the iteration (`break` or `return`).
 */
export async function* readLinesBackward(
  handle: FileHandle,
  end: number,
  options: { blockBytes?: number; maxLineBytes?: number } = {},
): AsyncGenerator<string> {
  const blockBytes = options.blockBytes ?? BACKWARD_BLOCK_BYTES;
  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
  // The line being assembled, in file order: the bytes after the newline last seen, read so far.
  let pieces: Buffer[] = [];
  let piecesBytes = 0;
  const prepend = (piece: Buffer): void => {
    if (piece.length === 0) return;
    pieces.unshift(piece);
    piecesBytes += piece.length;
    // Over the bound: drop the line's end, keep its beginning (read last, as the reading goes backwards).
    while (piecesBytes > maxLineBytes) {
      const last = pieces[pieces.length - 1] as Buffer;
      const over = piecesBytes - maxLineBytes;
      if (last.length <= over) {
        pieces.pop();
        piecesBytes -= last.length;
      } else {
        pieces[pieces.length - 1] = last.subarray(0, last.length - over);
        piecesBytes -= over;
      }
    }
  };
  const take = (): string | null => {
    const text = (pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces)).toString('utf8');
    pieces = [];
    piecesBytes = 0;
    const line = text.endsWith('\r') ? text.slice(0, -1) : text;
    return line === '' ? null : line;
  };

  let position = end;
  while (position > 0) {
    const length = Math.min(blockBytes, position);
    position -= length;
    // A buffer per block: the line pieces kept point into it.
    const block = Buffer.allocUnsafe(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await handle.read(block, read, length - read, position + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    // A file cut shorter meanwhile: what was not read is not there.
    const data = read === length ? block : block.subarray(0, read);
    let stop = data.length;
    for (;;) {
      const newline = stop > 0 ? data.lastIndexOf(NEWLINE, stop - 1) : -1;
      if (newline < 0) {
        prepend(data.subarray(0, stop));
        break;
      }
      prepend(data.subarray(newline + 1, stop));
      const line = take();
      if (line !== null) yield line;
      stop = newline;
    }
  }
  const first = take();
  if (first !== null) yield first;
}
