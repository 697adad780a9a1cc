import type { RunStep } from '../../shared/ports/CodeRunner.ts';
import type { RunOutput } from './runOutput.ts';

/**
 * Bounded buffers for child-process output: nothing here ever holds more than its cap, whatever
 * the child writes. Excess bytes are counted and dropped.
 */

/** Source of a log chunk; only operator output counts against the operator's fatal budget. */
export type LogSource = 'install' | 'code';

/** stdout+stderr of one run: keeps the first `maxBytes`, counts the rest. */
export class CappedLog {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;
  private readonly perSource: Record<LogSource, number> = { install: 0, code: 0 };
  private overflowNotified = false;

  constructor(
    readonly maxBytes: number,
    /** Called once when the code's own output goes past maxBytes. */
    private readonly onCodeOverflow: () => void = () => {},
    /** The run's output as lines for its session (RunOutput), when the caller wants them. */
    private readonly lines: RunOutput | null = null,
  ) {}

  /** Keeps `chunk` (of `stream`); returns it without the runtime's step marks (RunOutput). */
  append(source: LogSource, given: Buffer, stream: 'stdout' | 'stderr' = 'stdout'): Buffer {
    const chunk = this.lines ? this.lines.append(stream, given) : given;
    this.perSource[source] += chunk.length;
    const room = this.maxBytes - this.kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(Buffer.from(part));
      this.kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(0, room));
    if (source === 'code' && this.perSource.code > this.maxBytes && !this.overflowNotified) {
      this.overflowNotified = true;
      this.onCodeOverflow();
    }
    return chunk;
  }

  /** The token of the run's step marks, when its output is read as lines (sent to the runtime). */
  get markToken(): string | undefined {
    return this.lines?.token;
  }

  /** A runner note, kept even when the log is full (bounded by the caller). */
  note(text: string): void {
    const line = Buffer.from(`[runner] ${text}\n`);
    this.chunks.push(line);
    this.kept += line.length;
    this.lines?.note(text);
  }

  /** What the run does now (its output's lines say which step wrote them). */
  stepTo(step: RunStep): void {
    this.lines?.stepTo(step);
  }

  /**
   * Resolves once output written before the run's last protocol line has been read. That line and
   * the output come on different sockets, and one turn of the event loop reads what its poll found
   * ready: output that became ready after that poll but before the line was read (another stream
   * than the one polled ready, say stderr) is read in the next turn. Waited for only when the
   * output is read as lines (a run without a sink keeps its timing).
   */
  settle(): Promise<void> {
    return this.lines ? new Promise((resolve) => setImmediate(resolve)) : Promise.resolve();
  }

  /** The run is over: its last lines are handed on (RunOutput.end). */
  end(): void {
    this.lines?.end();
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  text(): string {
    const body = Buffer.concat(this.chunks).toString('utf8');
    return this.dropped > 0 ? `${body}\n[output truncated: ${this.dropped} bytes over the limit of ${this.maxBytes}]` : body;
  }
}

/** The last `maxBytes` of a stream (error messages want the end of stderr). */
export class TailBuffer {
  private buffer = Buffer.alloc(0);

  constructor(private readonly maxBytes: number) {}

  append(chunk: Buffer): void {
    const joined = this.buffer.length + chunk.length <= this.maxBytes ? Buffer.concat([this.buffer, chunk]) : Buffer.concat([this.buffer, chunk]).subarray(-this.maxBytes);
    this.buffer = Buffer.from(joined);
  }

  text(): string {
    return this.buffer.toString('utf8');
  }
}

/**
 * Splits a byte stream into lines without ever buffering more than `maxLineBytes` of an
 * unfinished line; a longer line calls `onOverflow` once and the reader stops.
 */
export class BoundedLineReader {
  private partial: Buffer[] = [];
  private partialBytes = 0;
  private stopped = false;

  constructor(
    public maxLineBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOverflow: (bytes: number) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.stopped) return;
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      if (this.partialBytes + piece.length > this.maxLineBytes) return this.overflow(this.partialBytes + piece.length);
      const line = this.partial.length === 0 ? piece.toString('utf8') : Buffer.concat([...this.partial, piece]).toString('utf8');
      this.partial = [];
      this.partialBytes = 0;
      start = nl + 1;
      this.onLine(line);
      if (this.stopped) return;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (this.partialBytes + rest.length > this.maxLineBytes) return this.overflow(this.partialBytes + rest.length);
      this.partial.push(Buffer.from(rest));
      this.partialBytes += rest.length;
    }
  }

  stop(): void {
    this.stopped = true;
    this.partial = [];
    this.partialBytes = 0;
  }

  private overflow(bytes: number): void {
    this.stop();
    this.onOverflow(bytes);
  }
}
