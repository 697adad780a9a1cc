import { basename } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { readLinesBackward } from './readLinesBackward.ts';
import { openLogFile, type LogPath } from './resolveLogPath.ts';
import type { SseResponse } from './SseResponse.ts';

/** Bytes per `chunk` event in normal mode. */
export const FILE_CHUNK_BYTES = 64 * 1024;

export interface LogFileQuery {
  reverse: boolean;
  /** Newest lines passed over first (reverse mode only). */
  skip: number;
  /** Lines sent at most (reverse mode only). */
  limit: number;
}

/**
 * GET /logs/file/{file_path} once the stream is open (status sent): `metadata`, then `chunk`
 * events, then `done {state: complete, total_chunks}`. Normal mode sends the file's bytes as they
 * were when it was opened (a file still growing is read up to the size `metadata` gave), in chunks
 * of FILE_CHUNK_BYTES, each decoded as UTF-8 without splitting a character. Reverse mode sends one
 * line per chunk, newest first, after `skip` lines, at most `limit`, reading the file backwards
 * from its end: a page near the end of a large file reads a few blocks of it, not the file.
 * Memory is one block plus what waits for the socket, whatever the file's size.
 */
export const streamLogFile = async (stream: SseResponse, found: LogPath, query: LogFileQuery): Promise<void> => {
  const handle = await openLogFile(found);
  if (handle === null) {
    stream.finish('error', { message: 'File not found' });
    return;
  }
  try {
    const stats = await handle.stat();
    const size = stats.size;
    const name = basename(found.relative);
    const metadata = query.reverse ? { name, path: found.relative, size } : { name, path: found.relative, size, modified: stats.mtime.toISOString() };
    await stream.send('metadata', JSON.stringify(metadata));
    let chunks = 0;
    if (query.reverse) {
      let seen = 0;
      for await (const line of readLinesBackward(handle, size)) {
        if (stream.closed) break;
        seen += 1;
        if (seen <= query.skip) continue;
        await stream.send('chunk', JSON.stringify({ content: line }));
        chunks += 1;
        if (chunks >= query.limit) break;
      }
    } else {
      const decoder = new StringDecoder('utf8');
      const block = Buffer.allocUnsafe(FILE_CHUNK_BYTES);
      let position = 0;
      while (position < size && !stream.closed) {
        const { bytesRead } = await handle.read(block, 0, Math.min(FILE_CHUNK_BYTES, size - position), position);
        if (bytesRead === 0) break;
        position += bytesRead;
        const content = decoder.write(block.subarray(0, bytesRead));
        if (content === '') continue;
        await stream.send('chunk', JSON.stringify({ content }));
        chunks += 1;
      }
      const rest = decoder.end();
      if (rest !== '') {
        await stream.send('chunk', JSON.stringify({ content: rest }));
        chunks += 1;
      }
    }
    stream.finish('done', { state: 'complete', total_chunks: chunks });
  } finally {
    await handle.close();
  }
};
