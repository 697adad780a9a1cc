import { cutMarker, cutTotalOf } from '../../shared/query/answerBudget.ts';

/**
 * What stands between a database socket and its driver (pg, mysql2) for POST /query/execute: the
 * bytes the server sends go through a protocol-aware guard before the driver parses them, so that
 *  - the driver never builds a value larger than the answer's bound (QUERY_MAX_BYTES): a row message
 *    larger than the bound is rewritten with its values cut (each cut value ends with the marker of
 *    shared/query/answerBudget.ts), and the read ends after that row;
 *  - a message the service has no use for at that size (a 600 MB error text, a huge row description)
 *    fails the request instead of being buffered;
 *  - an exception the driver throws while handling the bytes (it runs in the socket's data handler,
 *    where nothing would catch it and the process would exit) fails this request only.
 * The guard reads any server, including one the caller set up to be hostile: it relies on nothing the
 * server says except the protocol's framing, and cuts what it cannot bound.
 */

export interface WireGuardEvents {
  /** A row larger than the bound was cut and handed to the driver: the caller ends the read there. */
  onCut(): void;
  /** The driver threw on the bytes, or the server sent what the guard refuses: the request fails. */
  onFailure(error: Error): void;
}

/** Why a request failed at the guard: the target's fault (502), named. */
export class WireGuardError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireGuardError';
  }
}

/** The longest prefix of `bytes` that does not end inside a UTF-8 sequence (the cut must not leave half a character). */
export const utf8Prefix = (bytes: Buffer): Buffer => {
  let lead = bytes.length - 1;
  while (lead >= 0 && bytes.length - lead <= 4 && ((bytes[lead] as number) & 0xc0) === 0x80) lead -= 1;
  if (lead < 0 || bytes.length - lead > 4) return bytes;
  const first = bytes[lead] as number;
  const width = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
  return lead + width <= bytes.length ? bytes : bytes.subarray(0, lead);
};

const MARKER_START = Buffer.from('…[value cut: ', 'utf8');
/** The marker's longest UTF-8 form (N up to 2^53 - 1). */
const MARKER_ROOM = Buffer.byteLength(cutMarker(Number.MAX_SAFE_INTEGER), 'utf8');

/** A binary value the guard cut: the bytes kept and the marker after them; null for a value that was not cut. */
export const splitCut = (bytes: Uint8Array): { kept: Buffer; marker: string } | null => {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The marker is at most 48 bytes: only the tail is searched (values can be megabytes).
  const from = Math.max(0, buffer.length - 48);
  const found = buffer.subarray(from).lastIndexOf(MARKER_START);
  if (found === -1) return null;
  const start = from + found;
  const marker = buffer.subarray(start).toString('utf8');
  return cutTotalOf(marker) === null ? null : { kept: buffer.subarray(0, start), marker };
};

/**
 * The values of one row as the guard keeps them: at most `cap` bytes in all, in order; a value that
 * does not fit whole is cut (at a character boundary) and gets the marker naming its full size.
 * Each value is copied once, into a buffer of the size it will keep (and room for the marker).
 */
export class RowKeeper {
  private left: number;
  private value = Buffer.alloc(0);
  private kept = 0;
  private total = 0;

  constructor(cap: number) {
    this.left = cap;
  }

  /** A value of `total` bytes starts (Infinity: known at its end only, a C string). */
  begin(total: number): void {
    this.total = total;
    this.kept = 0;
    const keep = Math.min(total, this.left);
    this.value = Buffer.allocUnsafe(keep < total ? keep + MARKER_ROOM : keep);
  }

  /** The value's next bytes: kept while the row's allowance lasts, dropped after. */
  take(bytes: Buffer): void {
    const keep = Math.min(bytes.length, this.left, this.value.length - this.kept);
    if (keep <= 0) return;
    bytes.copy(this.value, this.kept, 0, keep);
    this.left -= keep;
    this.kept += keep;
  }

  /** The value as the driver gets it: whole, or cut with the marker. `total`: its size when only its end told it. */
  end(total = this.total): { bytes: Buffer; cut: boolean } {
    const value = this.value;
    this.value = Buffer.alloc(0);
    if (this.kept >= total) return { bytes: value.subarray(0, this.kept), cut: false };
    const prefix = utf8Prefix(value.subarray(0, this.kept)).length;
    const written = value.write(cutMarker(total), prefix, 'utf8');
    return { bytes: value.subarray(0, prefix + written), cut: true };
  }
}

/**
 * The part every guard shares: chunks in, framed as header then body (the header gathered across
 * chunks before the protocol decides), pieces out to the driver, any throw from either side turned
 * into onFailure, and nothing handed on after a stop.
 */
export abstract class WireGuard {
  private halted = false;
  private cutRow = false;
  private out: Buffer[] = [];
  private readonly header: Buffer;
  private headerFill = 0;
  private inHeader = true;

  constructor(
    headerSize: number,
    private readonly deliver: (chunk: Buffer) => void,
    private readonly events: WireGuardEvents,
  ) {
    this.header = Buffer.alloc(headerSize);
  }

  /** Bytes from the socket. */
  feed(chunk: Buffer): void {
    if (this.halted) return;
    try {
      this.consume(chunk);
    } catch (error) {
      this.fail(error);
      return;
    }
    const pieces = this.out;
    this.out = [];
    if (pieces.length > 0) {
      try {
        // One buffer: pg's parser takes a complete message without copying it again.
        this.deliver(pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces));
      } catch (error) {
        this.fail(error);
        return;
      }
    }
    if (this.cutRow) {
      this.halted = true;
      this.events.onCut();
    }
  }

  /** Hand nothing more to the driver (the request is over). */
  stop(): void {
    this.halted = true;
  }

  get stopped(): boolean {
    return this.halted;
  }

  private consume(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.cutRow) {
      if (!this.inHeader) {
        at = this.body(chunk, at);
        continue;
      }
      const take = Math.min(this.header.length - this.headerFill, chunk.length - at);
      chunk.copy(this.header, this.headerFill, at, at + take);
      this.headerFill += take;
      at += take;
      if (this.headerFill === this.header.length) {
        this.headerFill = 0;
        this.inHeader = false;
        this.begin(this.header);
      }
    }
  }

  /** A header is complete (the buffer is reused: copy what is kept). Throws WireGuardError to fail the request. */
  protected abstract begin(header: Buffer): void;

  /** Body bytes of `chunk` from `at`: returns where reading stopped (calling nextHeader() at the body's end). */
  protected abstract body(chunk: Buffer, at: number): number;

  /** The current body is over: the next bytes are a header. */
  protected nextHeader(): void {
    this.inHeader = true;
  }

  protected emit(piece: Buffer): void {
    if (piece.length > 0) this.out.push(piece);
  }

  /** A cut row was emitted: what follows it in this chunk is not read, and the read ends. */
  protected endAfterCutRow(): void {
    this.cutRow = true;
  }

  private fail(error: unknown): void {
    this.halted = true;
    this.out = [];
    this.events.onFailure(error instanceof Error ? error : new Error(String(error)));
  }
}
