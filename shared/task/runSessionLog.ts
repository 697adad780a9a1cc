import type { RunOutputDropped, RunOutputLine, RunOutputSink, RunStep } from '../ports/CodeRunner.ts';
import type { LogCategory, Logger, LogLevel } from '../ports/Logger.ts';
import { MASK } from '../item-types/secretFields.ts';

/** A service line of a run: a LogEntry without the session, which the run's log adds. */
export interface RunLine {
  level: LogLevel;
  category: LogCategory;
  message: string;
  step?: string;
  [extra: string]: unknown;
}

/**
 * The log of one run's session (an operator run, an action run): every line carries the session id
 * and the run's fields (task_laui, task_name, logical_date; an action's own), so the session's file
 * holds the whole run: the service's lines and the code's output, line by line.
 *
 * The session's last line is its end line, `session_end: true` (a reader following the session
 * stops there: it works across processes, from the files alone). A service line logged after it
 * (a post action's failure, which comes later) keeps the run's id as `run_session_id` and goes to
 * its category's file only, so that the end line stays the last.
 */
export interface RunSessionLog {
  log(line: RunLine): void;
  /** The run's end: its last line, with `session_end: true`. Later end lines are logged as plain lines. */
  end(line: RunLine): void;
  readonly ended: boolean;
  /**
   * The sink of the code's output (CodeRunner's `output`): stdout lines at level info, stderr at
   * error, the runner's notes at warning, each under the step that wrote it; `secrets` (the run's
   * connection values, secretStringsOf) are masked in them, asked for at the first line (a run
   * that prints nothing costs nothing here).
   */
  output(secrets?: () => ReadonlyArray<string>): RunOutputSink;
}

export interface RunSessionOptions {
  /** Category of the output lines: TASK. */
  category: LogCategory;
  /** The step an output line is logged under; default the runner's (load, initialize, run, ...). */
  step?: (step: RunStep) => string;
}

export const runSessionLog = (logger: Logger, sessionId: string, fields: Readonly<Record<string, unknown>>, options: RunSessionOptions): RunSessionLog => {
  let ended = false;
  const write = (line: RunLine, end: boolean) => {
    if (ended) {
      logger.log({ ...line, ...fields, run_session_id: sessionId });
      return;
    }
    logger.log({ ...line, session_id: sessionId, ...fields, ...(end ? { session_end: true } : {}) });
    if (end) ended = true;
  };
  const stepOf = options.step ?? ((step: RunStep) => step);
  return {
    log: (line) => write(line, false),
    end: (line) => write(line, true),
    get ended() {
      return ended;
    },
    output: (secrets = () => []) => {
      let masked: ((text: string) => string) | null = null;
      return {
        line: (line: RunOutputLine) => {
          if (masked === null) {
            const values = secrets();
            masked = values.length === 0 ? (text: string) => text : masker(values);
          }
          write(
            {
              level: line.stream === 'stderr' ? 'error' : line.stream === 'runner' ? 'warning' : 'info',
              category: options.category,
              step: stepOf(line.step),
              message: masked(line.text),
              stream: line.stream,
              ...(line.cutBytes !== undefined ? { cut_bytes: line.cutBytes } : {}),
              ...(line.partial ? { partial: true } : {}),
            },
            false,
          );
        },
        dropped: (dropped: RunOutputDropped) => {
          write(
            {
              level: 'warning',
              category: options.category,
              step: 'output',
              message: `${dropped.lines} more lines (${dropped.bytes} bytes) of output were not logged: a run logs at most ${dropped.maxLines} lines and ${dropped.maxBytes} bytes of output`,
              dropped_lines: dropped.lines,
              dropped_bytes: dropped.bytes,
            },
            false,
          );
        },
      };
    },
  };
};

/** Replaces each secret (longest first, so one holding another is masked whole) with the mask. */
const masker = (secrets: ReadonlyArray<string>): ((text: string) => string) => {
  const ordered = [...new Set(secrets)].sort((a, b) => b.length - a.length);
  return (text) => {
    let result = text;
    for (const secret of ordered) if (result.includes(secret)) result = result.split(secret).join(MASK);
    return result;
  };
};
