import { randomBytes } from 'node:crypto';
import type { RunOutputSink, RunStep } from '../../shared/ports/CodeRunner.ts';

/** How much of a run's output is logged (README, "Run output"). */
export interface RunOutputLimits {
  /** Lines logged per run; from the first line over a cap on, lines are counted, not logged. */
  maxLines: number;
  /** Bytes of text logged per run (both streams together). */
  maxBytes: number;
  /** A longer line is cut to its first maxLineBytes bytes (how many were cut is said on it). */
  maxLineBytes: number;
  /** An unfinished line (no newline yet) is logged once it has waited this long: a progress line shows. */
  partialFlushMs: number;
}

export const DEFAULT_RUN_OUTPUT_LIMITS: RunOutputLimits = {
  maxLines: 10_000,
  maxBytes: 1024 * 1024,
  maxLineBytes: 16 * 1024,
  partialFlushMs: 250,
};

/** The unfinished line of one stream: at most maxLineBytes kept, the rest only counted. */
class Pending {
  parts: Buffer[] = [];
  kept = 0;
  cut = 0;
  /** When its first byte came (Date.now()), for the flush delay. */
  since = 0;
  /** Capped: the stream's last chunk did not end a line (one more dropped line at the end). */
  open = false;
  /** The step the stream's last mark named; null before its first mark (the run's step then). */
  step: RunStep | null = null;
  /** The start of what may be a mark, at the end of the last chunk: read with the next one. */
  carry: Buffer | null = null;

  get empty(): boolean {
    return this.kept === 0 && this.cut === 0;
  }

  take(): { bytes: Buffer; cut: number } {
    const bytes = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts);
    const cut = this.cut;
    this.parts = [];
    this.kept = 0;
    this.cut = 0;
    return { bytes, cut };
  }
}

/**
 * Mark tokens: a random prefix per service process and a counter. A token only has to be unlike
 * anything a run writes by chance; guessing one gains nothing (a mark is read in its own run's
 * output only). A random token per run cost more than the rest of a silent run's capture.
 */
const TOKEN_PREFIX = randomBytes(6).toString('hex');
let tokens = 0;
const nextToken = (): string => `${TOKEN_PREFIX}${(tokens++ % 0x100000000).toString(16).padStart(8, '0')}`;

/** A mark's first byte (ASCII record separator): "\x1e<token>:<step>\x1e", written by the runtimes. */
const MARK = 0x1e;
const LONGEST_STEP = 'check_completion'.length;
const STEPS: ReadonlySet<string> = new Set<RunStep>(['install', 'load', 'initialize', 'run', 'check_completion', 'finish']);

/**
 * A run's stdout and stderr as lines, handed to the run's sink while the run goes on; nothing here
 * ever holds more than maxLineBytes per stream. The lines are the first of the run's output up to
 * the caps (maxLines, maxBytes): from the first line over a cap on, the rest is only counted (newlines
 * and bytes), and end() reports it once. The text is data: decoded as UTF-8 and never parsed.
 *
 * Which step wrote a line: output comes on channels of its own, apart from the protocol lines that
 * say when a step ended, so arrival order cannot tell (a fast run's whole output may come in one
 * read). The runtimes write a mark naming the step before what the code writes through its
 * stdout/stderr objects whenever the step changed ("\x1e<token>:<step>\x1e", the token this run's,
 * sent with its exec); marks are taken out of the stream here. Output no mark precedes (a
 * subprocess's, before the code printed anything itself) is under the step the protocol says.
 * A mark is only read in its own run's output: a forged one can only relabel that run's own lines.
 *
 * A run that writes nothing costs this object and a comparison per step change.
 */
export class RunOutput {
  private readonly streams = { stdout: new Pending(), stderr: new Pending() };
  private current: RunStep;
  private lines = 0;
  private bytes = 0;
  private full = false;
  private dropped = { lines: 0, bytes: 0 };
  private timer: NodeJS.Timeout | null = null;
  private ended = false;
  /** This run's mark token (sent to the runtime with the exec or load): unique, not secret (see above). */
  readonly token = nextToken();
  private readonly lead = Buffer.from(`\x1e${this.token}:`);

  constructor(
    private readonly sink: RunOutputSink,
    private readonly limits: RunOutputLimits = DEFAULT_RUN_OUTPUT_LIMITS,
    step: RunStep = 'load',
  ) {
    this.current = step;
  }

  get step(): RunStep {
    return this.current;
  }

  /** The run moved on (the protocol says): output that no mark labels is this step's from now on. */
  stepTo(step: RunStep): void {
    if (step === this.current) return;
    for (const stream of ['stdout', 'stderr'] as const) if (this.streams[stream].step === null) this.flush(stream);
    this.current = step;
  }

  /**
   * A chunk of the stream: its lines are handed on, its marks taken out. Returns the chunk without
   * its marks (the same buffer when it has none), for the runner's other uses of the output.
   */
  append(stream: 'stdout' | 'stderr', chunk: Buffer): Buffer {
    if (this.ended) return chunk;
    const pending = this.streams[stream];
    if (pending.carry) {
      chunk = Buffer.concat([pending.carry, chunk]);
      pending.carry = null;
    }
    let at = chunk.indexOf(MARK);
    if (at === -1) {
      this.text(stream, chunk);
      return chunk;
    }
    const data: Buffer[] = [];
    let start = 0;
    while (at !== -1) {
      const mark = this.readMark(chunk, at);
      if (mark === 'partial') {
        // Read with the next chunk (at end(), as text).
        pending.carry = Buffer.from(chunk.subarray(at));
        break;
      }
      if (mark === null) {
        at = chunk.indexOf(MARK, at + 1);
        continue;
      }
      data.push(chunk.subarray(start, at));
      this.text(stream, chunk.subarray(start, at));
      if (pending.step !== mark.step) {
        this.flush(stream);
        pending.step = mark.step;
      }
      start = mark.end;
      at = chunk.indexOf(MARK, start);
    }
    const rest = chunk.subarray(start, pending.carry ? chunk.length - pending.carry.length : chunk.length);
    data.push(rest);
    this.text(stream, rest);
    return data.length === 1 ? (data[0] as Buffer) : Buffer.concat(data);
  }

  /** A mark at `at`: its step and where it ends; 'partial' when the chunk ends inside what may be one; null when it is none. */
  private readMark(chunk: Buffer, at: number): { step: RunStep; end: number } | 'partial' | null {
    const available = chunk.length - at;
    const lead = this.lead;
    if (available < lead.length) return chunk.subarray(at).equals(lead.subarray(0, available)) ? 'partial' : null;
    if (chunk.compare(lead, 0, lead.length, at, at + lead.length) !== 0) return null;
    const from = at + lead.length;
    const close = chunk.indexOf(MARK, from);
    if (close === -1 || close - from > LONGEST_STEP) return close === -1 && chunk.length - from <= LONGEST_STEP ? 'partial' : null;
    const step = chunk.toString('latin1', from, close);
    return STEPS.has(step) ? { step: step as RunStep, end: close + 1 } : null;
  }

  /** Output text (no marks in it) of the stream. */
  private text(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    if (chunk.length === 0) return;
    const pending = this.streams[stream];
    if (this.full) return this.count(pending, chunk);
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline !== -1; newline = chunk.indexOf(10, start)) {
      if (pending.empty && newline - start <= this.limits.maxLineBytes) {
        // The common case, a whole line in the chunk: decoded from it, not copied first.
        this.emit(stream, chunk.subarray(start, newline), 0, false);
      } else {
        this.keep(pending, chunk, start, newline);
        const { bytes, cut } = pending.take();
        this.emit(stream, bytes, cut, false);
      }
      start = newline + 1;
      // Over a cap: what is left of the chunk is only counted.
      if (this.full) return this.count(pending, chunk.subarray(start));
    }
    if (start < chunk.length) {
      if (pending.empty) pending.since = Date.now();
      this.keep(pending, chunk, start, chunk.length);
      this.timer ??= this.schedule(this.limits.partialFlushMs);
    }
  }

  /** A note of the runner about the run (bounded by the caller): logged even over the caps. */
  note(text: string): void {
    if (!this.ended) this.sink.line({ stream: 'runner', step: this.current, text });
  }

  /** The run is over: unfinished lines are logged, then what went over the caps is reported. Idempotent. */
  end(): void {
    if (this.ended) return;
    for (const stream of ['stdout', 'stderr'] as const) {
      const carry = this.streams[stream].carry;
      this.streams[stream].carry = null;
      // What looked like the start of a mark and was not one.
      if (carry) this.text(stream, carry);
    }
    this.flushAll(0);
    this.ended = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // Over a cap, unfinished lines were not flushed: one more dropped line each.
    for (const pending of Object.values(this.streams)) {
      if (!pending.empty) {
        const { bytes, cut } = pending.take();
        this.dropped.bytes += bytes.length + cut;
        pending.open = true;
      }
      if (pending.open) this.dropped.lines += 1;
    }
    if (this.dropped.lines > 0 || this.dropped.bytes > 0) {
      this.sink.dropped({ ...this.dropped, maxLines: this.limits.maxLines, maxBytes: this.limits.maxBytes });
    }
  }

  private keep(pending: Pending, chunk: Buffer, from: number, to: number): void {
    const room = this.limits.maxLineBytes - pending.kept;
    const length = to - from;
    if (length <= room) {
      if (length > 0) pending.parts.push(Buffer.from(chunk.subarray(from, to)));
      pending.kept += length;
      return;
    }
    if (room > 0) pending.parts.push(Buffer.from(chunk.subarray(from, from + room)));
    pending.kept += Math.max(room, 0);
    pending.cut += length - Math.max(room, 0);
  }

  /** Logs one line (or counts it, over a cap). `cut`: bytes of it past maxLineBytes, not kept. */
  private emit(stream: 'stdout' | 'stderr', bytes: Buffer, cut: number, partial: boolean): void {
    // A line cut inside a character loses the character's first bytes too: the text stays valid UTF-8.
    const kept = cut > 0 ? bytes.subarray(0, completeUtf8(bytes)) : bytes;
    if (this.lines >= this.limits.maxLines || this.bytes + kept.length > this.limits.maxBytes) {
      this.full = true;
      this.dropped.lines += 1;
      this.dropped.bytes += bytes.length + cut + (partial ? 0 : 1);
      return;
    }
    this.lines += 1;
    this.bytes += kept.length;
    const text = shownText(kept.toString('utf8'));
    const cutBytes = cut + (bytes.length - kept.length);
    this.sink.line({ stream, step: this.streams[stream].step ?? this.current, text, ...(cutBytes > 0 ? { cutBytes } : {}), ...(partial ? { partial: true as const } : {}) });
  }

  /** Over a cap: newlines and bytes counted, nothing decoded. */
  private count(pending: Pending, chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (!pending.empty) {
      // The line being written when the cap was reached.
      const { bytes, cut } = pending.take();
      this.dropped.bytes += bytes.length + cut;
      pending.open = true;
    }
    let lines = 0;
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, newline + 1)) lines += 1;
    this.dropped.lines += lines;
    this.dropped.bytes += chunk.length;
    if (lines > 0) pending.open = false;
    if (chunk[chunk.length - 1] !== 10) pending.open = true;
  }

  /** Logs the stream's unfinished line now (its step ends). */
  private flush(stream: 'stdout' | 'stderr'): void {
    const pending = this.streams[stream];
    if (pending.empty || this.full) return;
    const { bytes, cut } = pending.take();
    this.emit(stream, bytes, cut, true);
  }

  /** Logs the unfinished lines that waited at least `olderThanMs`; the timer comes back for the others. */
  private flushAll(olderThanMs: number): void {
    const now = olderThanMs > 0 ? Date.now() : 0;
    let waiting = Infinity;
    for (const stream of ['stdout', 'stderr'] as const) {
      const pending = this.streams[stream];
      if (pending.empty || this.full) continue;
      const age = now - pending.since;
      if (olderThanMs > 0 && age < olderThanMs) {
        waiting = Math.min(waiting, olderThanMs - age);
        continue;
      }
      // On the flush delay, a character split between two writes waits for its last bytes.
      const held = olderThanMs > 0 && pending.cut === 0 ? heldBack(pending) : null;
      if (!pending.empty) {
        const { bytes, cut } = pending.take();
        this.emit(stream, bytes, cut, true);
      }
      if (held) {
        pending.parts = [held];
        pending.kept = held.length;
        pending.since = Date.now();
        waiting = Math.min(waiting, olderThanMs);
      }
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = waiting === Infinity || this.ended ? null : this.schedule(waiting);
  }

  private schedule(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timer = null;
      this.flushAll(this.limits.partialFlushMs);
    }, ms);
    // The run's own promise keeps the process alive; a pending flush must not.
    timer.unref();
    return timer;
  }
}

/**
 * The bytes at the end of a pending line that start a character not yet complete: taken off the
 * line (which then ends on a whole character) and returned, or null.
 */
function heldBack(pending: Pending): Buffer | null {
  const last = pending.parts[pending.parts.length - 1];
  if (!last) return null;
  const whole = completeUtf8(last);
  if (whole === last.length) return null;
  const held = Buffer.from(last.subarray(whole));
  pending.parts[pending.parts.length - 1] = last.subarray(0, whole);
  pending.kept -= held.length;
  return held;
}

/** The length of `bytes` without an incomplete UTF-8 sequence at its end. */
export function completeUtf8(bytes: Buffer): number {
  const length = bytes.length;
  // A sequence is at most 4 bytes: look at the last 3 for its lead byte.
  for (let back = 1; back <= Math.min(3, length); back += 1) {
    const byte = bytes[length - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? length - back : length;
  }
  return length;
}

/**
 * What a terminal shows of a line: a carriage return moves back to its start, so the text after
 * the last one is what stays (a progress bar's latest state; CRLF endings lose their CR).
 */
export function shownText(text: string): string {
  const last = text.lastIndexOf('\r');
  if (last === -1) return text;
  const after = text.slice(last + 1);
  if (after !== '') return after;
  return text.slice(text.lastIndexOf('\r', last - 1) + 1, last);
}
