import type { Connection } from 'mysql2';
import { RowKeeper, WireGuard, WireGuardError, type WireGuardEvents } from './wireGuard.ts';

/**
 * The wire guard of the MySQL / MariaDB target (wireGuard.ts), on the client/server protocol's
 * packets: a 3-byte little-endian length, a sequence id, the payload; a payload of 0xFFFFFF bytes
 * continues in the next packet (one logical packet, as large as max_allowed_packet allows).
 *  - A packet within the bound goes through unchanged.
 *  - A logical packet that may exceed it (larger than the bound, or in several parts) is read as a
 *    text-protocol row (values as length-encoded strings, 0xFB for NULL): its original bytes are kept
 *    while it stays within the bound and handed on unchanged if it ends there; past the bound its
 *    values are cut, the row is rebuilt (split in 0xFFFFFF parts again if need be) and the read ends.
 *  - An error packet (0xFF) of that size keeps its first 64 KiB.
 * A packet of that size that is no row (a hostile server) comes out as garbage the driver refuses,
 * or as a framing error here: either way the request fails, the process does not.
 */

const MAX_PART = 0xffffff;
const NULL_VALUE = 0xfb;
const ERROR_PACKET = 0xff;
/** The text of an oversized error packet kept. */
export const MYSQL_ERROR_CAP = 64 * 1024;

const malformed = (): WireGuardError => new WireGuardError('The target sent a malformed row packet');

/** A length-encoded integer (MySQL protocol). */
const lengthEncoded = (value: number): Buffer => {
  if (value < NULL_VALUE) return Buffer.from([value]);
  if (value < 0x10000) return Buffer.from([0xfc, value & 0xff, value >> 8]);
  if (value < 0x1000000) return Buffer.from([0xfd, value & 0xff, (value >> 8) & 0xff, value >> 16]);
  const bytes = Buffer.alloc(9);
  bytes[0] = 0xfe;
  bytes.writeBigUInt64LE(BigInt(value), 1);
  return bytes;
};

/**
 * The payload made of `pieces` as packets of at most 0xFFFFFF bytes from sequence id `sequence` (a
 * payload ending on a full part gets an empty last part), as pieces again: nothing is copied.
 */
const packets = (pieces: ReadonlyArray<Buffer>, sequence: number): Buffer[] => {
  const out: Buffer[] = [];
  let left = pieces.reduce((sum, piece) => sum + piece.length, 0);
  let id = sequence;
  let index = 0;
  let offset = 0;
  for (;;) {
    const size = Math.min(MAX_PART, left);
    out.push(Buffer.from([size & 0xff, (size >> 8) & 0xff, size >> 16, id & 0xff]));
    let need = size;
    while (need > 0) {
      const piece = pieces[index] as Buffer;
      const take = Math.min(need, piece.length - offset);
      out.push(piece.subarray(offset, offset + take));
      need -= take;
      offset += take;
      if (offset === piece.length) {
        index += 1;
        offset = 0;
      }
    }
    left -= size;
    id += 1;
    if (size < MAX_PART) return out;
  }
};

export class MysqlWireGuard extends WireGuard {
  private state: 'pass' | 'watch' = 'pass';
  /** Payload bytes of the current physical packet not read yet. */
  private remaining = 0;
  /** The current physical packet is the last part of its logical packet. */
  private lastPart = true;
  // A watched logical packet.
  private inLogical = false;
  private firstSequence = 0;
  private seen = 0;
  /** Its original bytes (headers included) while it is within the bound; null once past. */
  private originals: Buffer[] | null = null;
  private keeper = new RowKeeper(0);
  private rewritten: Buffer[] = [];
  private anyCut = false;
  private kind: 'row' | 'error' | 'unknown' = 'unknown';
  private readonly scratch = Buffer.alloc(9);
  private scratchFill = 0;
  private scratchNeed = 0;
  private valuePhase: 'prefix' | 'length' | 'value' = 'prefix';
  private valueLeft = 0;

  constructor(
    private readonly rowCap: number,
    deliver: (chunk: Buffer) => void,
    events: WireGuardEvents,
  ) {
    super(4, deliver, events);
  }

  protected begin(header: Buffer): void {
    const size = header.readUIntLE(0, 3);
    this.remaining = size;
    this.lastPart = size < MAX_PART;
    if (!this.inLogical && this.lastPart && size <= this.rowCap) {
      this.emit(Buffer.from(header));
      this.state = 'pass';
      if (size === 0) this.nextHeader();
      return;
    }
    if (!this.inLogical) {
      this.inLogical = true;
      this.firstSequence = header[3] as number;
      this.seen = 0;
      this.originals = [];
      this.keeper = new RowKeeper(this.rowCap);
      this.rewritten = [];
      this.anyCut = false;
      this.kind = 'unknown';
      this.valuePhase = 'prefix';
      this.scratchFill = 0;
    }
    this.originals?.push(Buffer.from(header));
    this.state = 'watch';
    if (size === 0) this.endPart();
  }

  protected body(chunk: Buffer, at: number): number {
    const end = at + Math.min(this.remaining, chunk.length - at);
    const piece = chunk.subarray(at, end);
    if (this.state === 'pass') this.emit(piece);
    else this.watch(piece);
    this.remaining -= end - at;
    if (this.remaining === 0) this.endPart();
    return end;
  }

  private watch(piece: Buffer): void {
    if (piece.length === 0) return;
    this.seen += piece.length;
    if (this.originals !== null) {
      if (this.seen <= this.rowCap) this.originals.push(Buffer.from(piece));
      else this.originals = null;
    }
    if (this.kind === 'unknown') {
      this.kind = piece[0] === ERROR_PACKET ? 'error' : 'row';
      if (this.kind === 'error') {
        this.keeper = new RowKeeper(MYSQL_ERROR_CAP);
        this.keeper.begin(Number.POSITIVE_INFINITY);
      }
    }
    if (this.kind === 'error') this.keeper.take(piece);
    else this.readValues(piece);
  }

  /** Row payload bytes: length-encoded values, each kept within the row's allowance. */
  private readValues(piece: Buffer): void {
    let index = 0;
    while (index < piece.length) {
      if (this.valuePhase === 'value') {
        const take = Math.min(this.valueLeft, piece.length - index);
        this.keeper.take(piece.subarray(index, index + take));
        index += take;
        this.valueLeft -= take;
        if (this.valueLeft === 0) this.endValue();
      } else if (this.valuePhase === 'prefix') {
        const first = piece[index] as number;
        index += 1;
        if (first === NULL_VALUE) {
          this.rewritten.push(Buffer.from([NULL_VALUE]));
        } else if (first < NULL_VALUE) {
          this.startValue(first);
        } else if (first === ERROR_PACKET) {
          throw malformed();
        } else {
          this.scratchNeed = first === 0xfc ? 2 : first === 0xfd ? 3 : 8;
          this.scratchFill = 0;
          this.valuePhase = 'length';
        }
      } else {
        const take = Math.min(this.scratchNeed - this.scratchFill, piece.length - index);
        piece.copy(this.scratch, this.scratchFill, index, index + take);
        this.scratchFill += take;
        index += take;
        if (this.scratchFill === this.scratchNeed) {
          const length = this.scratchNeed === 8 ? this.scratch.readBigUInt64LE(0) : BigInt(this.scratch.readUIntLE(0, this.scratchNeed));
          if (length > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed();
          this.startValue(Number(length));
        }
      }
    }
  }

  private startValue(length: number): void {
    this.keeper.begin(length);
    this.valueLeft = length;
    this.valuePhase = 'value';
    if (length === 0) this.endValue();
  }

  private endValue(): void {
    const value = this.keeper.end();
    this.anyCut ||= value.cut;
    this.rewritten.push(lengthEncoded(value.bytes.length), value.bytes);
    this.valuePhase = 'prefix';
  }

  /** A physical packet ended: at the end of a watched logical packet, hand it on, as it was or rebuilt. */
  private endPart(): void {
    this.nextHeader();
    if (this.state === 'pass' || !this.lastPart) return;
    this.inLogical = false;
    if (this.originals !== null) {
      for (const original of this.originals) this.emit(original);
      this.originals = null;
      return;
    }
    if (this.kind === 'error') {
      for (const piece of packets([this.keeper.end(this.seen).bytes], this.firstSequence)) this.emit(piece);
      return;
    }
    if (this.valuePhase !== 'prefix') throw malformed();
    for (const piece of packets(this.rewritten, this.firstSequence)) this.emit(piece);
    this.rewritten = [];
    if (this.anyCut) this.endAfterCutRow();
  }
}

interface MysqlConnectionInternals {
  packetParser: { execute(chunk: Buffer): void };
}

/**
 * Puts a MysqlWireGuard between `connection`'s socket and its packet parser: mysql2 hands every
 * chunk (plain or TLS) to `connection.packetParser.execute`, so the guard takes that place and
 * feeds the real parser (whose `execute` changes with its state: it is looked up on each call).
 */
export const guardMysqlConnection = (connection: Connection, rowCap: number, events: WireGuardEvents): MysqlWireGuard => {
  const internals = connection as unknown as MysqlConnectionInternals;
  const parser = internals.packetParser;
  if (typeof parser?.execute !== 'function') throw new Error('mysql2 changed: Connection.packetParser is gone (ops/query/mysqlWireGuard.ts)');
  const guard = new MysqlWireGuard(rowCap, (chunk) => parser.execute(chunk), events);
  internals.packetParser = { execute: (chunk) => guard.feed(chunk) };
  return guard;
};
