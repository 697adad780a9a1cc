import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { RowKeeper, WireGuard, WireGuardError, type WireGuardEvents } from './wireGuard.ts';

/**
 * The wire guard of the PostgreSQL target (wireGuard.ts), on the backend messages (protocol 3: a
 * type byte, an Int32 length that counts itself, the body):
 *  - DataRow (`D`) larger than the bound: rewritten with its values cut (Int16 count, then per value
 *    an Int32 length, -1 for NULL, and the bytes), then the read ends;
 *  - ErrorResponse / NoticeResponse (`E`, `N`) larger than 64 KiB: their fields (a code byte and a
 *    C string each) cut to 64 KiB in all, the message otherwise kept (the session goes on);
 *  - any other message larger than 1 MiB: the request fails (a row description, a parameter status,
 *    a notification of that size is no answer the service can give).
 * Messages within their bound go through unchanged, chunk by chunk, as they arrive.
 */

const DATA_ROW = 0x44;
const ERROR_RESPONSE = 0x45;
const NOTICE_RESPONSE = 0x4e;
/** The text of an error or notice kept in all (its message, detail, hint...). */
export const PG_NOTICE_CAP = 64 * 1024;
/** Any other message. */
export const PG_MESSAGE_CAP = 1024 * 1024;

const int32 = (value: number): Buffer => {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32BE(value, 0);
  return bytes;
};

const malformed = (what: string): WireGuardError => new WireGuardError(`The target sent a malformed ${what}`);

export class PgWireGuard extends WireGuard {
  private state: 'pass' | 'row' | 'notice' = 'pass';
  private type = 0;
  /** Body bytes of the current message not read yet. */
  private remaining = 0;
  private keeper = new RowKeeper(0);
  /** What replaces the current message's body, piece by piece. */
  private rewritten: Buffer[] = [];
  private anyCut = false;
  // DataRow fields.
  private readonly scratch = Buffer.alloc(4);
  private scratchFill = 0;
  private rowPhase: 'count' | 'length' | 'value' | 'done' = 'count';
  private fieldsLeft = 0;
  private valueLeft = 0;
  // ErrorResponse / NoticeResponse fields.
  private noticePhase: 'code' | 'text' | 'end' = 'code';
  private textSeen = 0;

  constructor(
    private readonly rowCap: number,
    deliver: (chunk: Buffer) => void,
    events: WireGuardEvents,
  ) {
    super(5, deliver, events);
  }

  /** A message header is complete: pass its message through, rewrite it, or refuse it. */
  protected begin(header: Buffer): void {
    this.type = header[0] as number;
    const length = header.readUInt32BE(1);
    if (length < 4) throw malformed('message');
    this.remaining = length - 4;
    const notice = this.type === ERROR_RESPONSE || this.type === NOTICE_RESPONSE;
    if (this.type === DATA_ROW && this.remaining > this.rowCap) {
      this.start('row', this.rowCap);
      this.rowPhase = 'count';
    } else if (notice && this.remaining > PG_NOTICE_CAP) {
      this.start('notice', PG_NOTICE_CAP);
      this.noticePhase = 'code';
    } else if (this.type !== DATA_ROW && !notice && this.remaining > PG_MESSAGE_CAP) {
      throw new WireGuardError(`The target sent a protocol message of ${this.remaining} bytes (type ${String.fromCharCode(this.type)}); the service reads at most ${PG_MESSAGE_CAP} bytes of it`);
    } else {
      this.emit(Buffer.from(header));
      this.state = 'pass';
      if (this.remaining === 0) this.nextHeader();
    }
  }

  protected body(chunk: Buffer, at: number): number {
    const end = at + Math.min(this.remaining, chunk.length - at);
    if (this.state === 'pass') this.emit(chunk.subarray(at, end));
    else if (this.state === 'row') this.readRow(chunk, at, end);
    else this.readNotice(chunk, at, end);
    this.remaining -= end - at;
    if (this.remaining === 0) {
      if (this.state !== 'pass') this.finish();
      this.nextHeader();
    }
    return end;
  }

  private start(state: 'row' | 'notice', cap: number): void {
    this.state = state;
    this.keeper = new RowKeeper(cap);
    this.rewritten = [];
    this.anyCut = false;
    this.scratchFill = 0;
  }

  /** DataRow body bytes [at, end) of `chunk`. */
  private readRow(chunk: Buffer, at: number, end: number): void {
    let index = at;
    while (index < end) {
      if (this.rowPhase === 'value') {
        const take = Math.min(this.valueLeft, end - index);
        this.keeper.take(chunk.subarray(index, index + take));
        index += take;
        this.valueLeft -= take;
        if (this.valueLeft === 0) this.endValue();
        continue;
      }
      if (this.rowPhase === 'done') throw malformed('data row');
      const need = this.rowPhase === 'count' ? 2 : 4;
      const take = Math.min(need - this.scratchFill, end - index);
      chunk.copy(this.scratch, this.scratchFill, index, index + take);
      this.scratchFill += take;
      index += take;
      if (this.scratchFill < need) continue;
      this.scratchFill = 0;
      if (this.rowPhase === 'count') {
        this.fieldsLeft = this.scratch.readUInt16BE(0);
        this.rewritten.push(Buffer.from(this.scratch.subarray(0, 2)));
        this.rowPhase = this.fieldsLeft > 0 ? 'length' : 'done';
        continue;
      }
      const length = this.scratch.readInt32BE(0);
      if (length === -1) {
        this.rewritten.push(int32(-1));
        this.nextField();
      } else if (length < 0) {
        throw malformed('data row');
      } else {
        this.keeper.begin(length);
        this.valueLeft = length;
        this.rowPhase = 'value';
        if (length === 0) this.endValue();
      }
    }
  }

  private endValue(): void {
    const value = this.keeper.end();
    this.anyCut ||= value.cut;
    this.rewritten.push(int32(value.bytes.length), value.bytes);
    this.nextField();
  }

  private nextField(): void {
    this.fieldsLeft -= 1;
    this.rowPhase = this.fieldsLeft > 0 ? 'length' : 'done';
  }

  /** ErrorResponse / NoticeResponse body bytes [at, end) of `chunk`. */
  private readNotice(chunk: Buffer, at: number, end: number): void {
    let index = at;
    while (index < end) {
      if (this.noticePhase === 'end') throw malformed('error message');
      if (this.noticePhase === 'code') {
        const code = chunk[index] as number;
        index += 1;
        if (code === 0) {
          this.noticePhase = 'end';
        } else {
          this.rewritten.push(Buffer.from([code]));
          this.keeper.begin(Number.POSITIVE_INFINITY);
          this.textSeen = 0;
          this.noticePhase = 'text';
        }
        continue;
      }
      const nul = chunk.indexOf(0, index);
      const stop = nul === -1 || nul >= end ? end : nul;
      this.keeper.take(chunk.subarray(index, stop));
      this.textSeen += stop - index;
      index = stop;
      if (stop < end) {
        index += 1;
        this.rewritten.push(this.keeper.end(this.textSeen).bytes, Buffer.from([0]));
        this.noticePhase = 'code';
      }
    }
  }

  /** The rewritten message is complete: hand it on (and end the read after a cut row). */
  private finish(): void {
    if (this.state === 'row' && this.rowPhase !== 'done') throw malformed('data row');
    if (this.state === 'notice') {
      if (this.noticePhase !== 'end') throw malformed('error message');
      this.rewritten.push(Buffer.from([0]));
    }
    const length = this.rewritten.reduce((sum, piece) => sum + piece.length, 4);
    this.emit(Buffer.concat([Buffer.from([this.type]), int32(length)]));
    for (const piece of this.rewritten) this.emit(piece);
    this.rewritten = [];
    if (this.state === 'row' && this.anyCut) this.endAfterCutRow();
  }
}

interface PgConnectionInternals {
  attachListeners(stream: NodeJS.EventEmitter): void;
}

/**
 * Puts a PgWireGuard between `client`'s socket and its protocol parser, from the first byte the
 * parser reads (pg attaches it once connected, or once TLS is up). pg's parser listens to `data`
 * and `end` only: it gets a relay that carries those, the data through the guard.
 */
export const guardPgClient = (client: pg.Client, rowCap: number, events: WireGuardEvents): { readonly guard: PgWireGuard | null } => {
  const connection = (client as unknown as { connection: PgConnectionInternals }).connection;
  if (typeof connection.attachListeners !== 'function') throw new Error('pg changed: Connection.attachListeners is gone (ops/query/pgWireGuard.ts)');
  const attach = connection.attachListeners.bind(connection);
  const installed: { guard: PgWireGuard | null } = { guard: null };
  connection.attachListeners = (stream) => {
    const relay = new EventEmitter();
    const guard = new PgWireGuard(rowCap, (chunk) => relay.emit('data', chunk), events);
    installed.guard = guard;
    stream.on('data', (chunk: Buffer) => guard.feed(chunk));
    stream.on('end', () => relay.emit('end'));
    attach(relay);
  };
  return installed;
};
