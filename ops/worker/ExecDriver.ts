import type { CallResult, Driver } from './Driver.ts';
import { raceUntil, type RunControl } from './RunControl.ts';
import { ProcessDied, type ExecEvent, type ExecEvents, type ExecRequest, type ExecStep, type RuntimeProcess, type WireError } from './RuntimeProcess.ts';

type Read = { event: ExecEvent } | { died: ProcessDied } | 'deadline' | 'cancelled';

const INTERRUPTED: WireError = {
  type: 'Interrupted',
  message: 'Interrupted: interrupted by the runner (time limit or cancellation)',
  traceback: '',
};

/**
 * The whole run as one exec request; its lines are read in the order of the run's logic, each as
 * the result of the call the logic makes next. The process polls check_completion by itself
 * (pause() reads the next poll's line, or the completion timeout it saw).
 *
 * Time limit, cancellation and the finish budget stay here: when one is reached, the runner asks
 * the exec to give up (an abandon line, plus SIGINT for Python) after `read` lines; the process
 * answers with an `interrupted` line and goes on to finish, or, when the abandon crossed the line
 * that announced finish, lets finish run. A process that does neither within interruptGraceMs is
 * killed, as a call that does not stop is with StepDriver.
 */
export class ExecDriver implements Driver {
  private readonly id: number;
  private readonly events: ExecEvents;
  /** Lines taken so far. */
  private read = 0;
  /** The exec sent its last line. */
  private ended = false;
  /** A check_completion result read by pause(), handed to the next call(). */
  private stash: CallResult | null = null;
  /** finish's result, when its line came while the runner was giving up on an earlier step. */
  private finished: CallResult | null = null;

  constructor(
    private readonly proc: RuntimeProcess,
    message: ExecRequest,
    recycle: boolean,
    private readonly control: RunControl,
    private readonly graceMs: number,
  ) {
    const sent = proc.exec(message, recycle);
    this.id = sent.id;
    this.events = sent.events;
  }

  load(): Promise<CallResult> {
    return this.expect('load', this.control.deadline);
  }

  call(fn: string, deadline: number): Promise<CallResult> {
    const stashed = this.stash;
    this.stash = null;
    return stashed ? Promise.resolve(stashed) : this.expect(fn, deadline);
  }

  async pause(completionDeadline: number): Promise<'poll' | 'completion' | 'deadline' | 'cancelled'> {
    // The process sleeps, then polls; the next line is that poll's result. The runner's completion
    // deadline is measured from when it read run's line, after the process started polling: the
    // process sees the completion timeout first, this one only ends a poll that does not return.
    const got = await this.next(Math.min(this.control.deadline, completionDeadline), this.control);
    if (got === 'deadline' || got === 'cancelled') {
      const where = await this.giveUp();
      if (got === 'deadline' && completionDeadline < this.control.deadline) return 'completion';
      if (where === 'sleep') return got;
      this.stash = { kind: got === 'deadline' ? 'timeout' : 'cancelled' };
      return 'poll';
    }
    if ('died' in got) {
      this.stash = { kind: 'died', died: got.died };
      return 'poll';
    }
    if ('completion' in got.event) return 'completion';
    this.stash = this.asCall(got.event, 'check_completion');
    return 'poll';
  }

  async finish(deadline: number): Promise<CallResult> {
    if (this.finished) return this.finished;
    if (this.ended) return { kind: 'died', died: new ProcessDied('protocol', 'the runtime ended the run without calling finish') };
    const got = await this.next(deadline, null);
    if (got === 'deadline' || got === 'cancelled') {
      await this.giveUp();
      return { kind: 'timeout' };
    }
    if ('died' in got) return { kind: 'died', died: got.died };
    return this.asCall(got.event, 'finish');
  }

  /** The next line as the result of `fn`; at the deadline or cancellation, the exec gives up. */
  private async expect(fn: string, deadline: number): Promise<CallResult> {
    const got = await this.next(deadline, this.control);
    if (got === 'deadline' || got === 'cancelled') {
      await this.giveUp();
      return { kind: got === 'deadline' ? 'timeout' : 'cancelled' };
    }
    if ('died' in got) return { kind: 'died', died: got.died };
    return this.asCall(got.event, fn);
  }

  /** The next line; the lines already read come before a deadline or cancellation. */
  private async next(deadline: number, control: RunControl | null): Promise<Read> {
    const ready = this.take();
    if (ready) return ready;
    if (control?.cancelled) return 'cancelled';
    const waited = control ? await control.race(this.events.available(), deadline) : await raceUntil(this.events.available(), deadline);
    if (waited === 'deadline' || waited === 'cancelled') return this.take() ?? waited;
    return this.take() ?? { died: new ProcessDied('protocol', 'the runtime sent no line') };
  }

  private take(): { event: ExecEvent } | { died: ProcessDied } | null {
    let event: ExecEvent | null;
    try {
      event = this.events.take();
    } catch (error) {
      return { died: error instanceof ProcessDied ? error : new ProcessDied('exited', String(error)) };
    }
    if (!event) return null;
    this.read += 1;
    if (event.done) this.ended = true;
    return { event };
  }

  /**
   * Asks the exec to give up what it is doing and waits (interruptGraceMs) until it has: an
   * `interrupted` line (where it was), or a line after which only finish runs (the abandon came
   * too late to matter). Returns where it was interrupted, null otherwise; kills a process that
   * does not answer in time.
   */
  private async giveUp(): Promise<ExecStep | 'sleep' | null> {
    if (this.ended) return null;
    this.proc.interruptExec(this.id, this.read);
    const graceEnd = Date.now() + this.graceMs;
    for (;;) {
      const got = await this.next(graceEnd, null);
      if (got === 'deadline' || got === 'cancelled' || 'died' in got) {
        this.proc.kill('killed');
        return null;
      }
      const event = got.event;
      if ('interrupted' in event) return event.interrupted;
      if ('fn' in event && event.fn === 'finish') {
        this.finished = this.asCall(event, 'finish');
        return null;
      }
      if (event.next === 'finish' || event.done) return null;
      // A step that ended before the abandon arrived: the exec gives up the next one.
    }
  }

  /** A line read as the result of `fn`; a line the run's logic cannot have led to is a protocol error. */
  private asCall(event: ExecEvent, fn: string): CallResult {
    if ('fn' in event && event.fn === fn) {
      if (!event.ok) return { kind: 'error', error: event.error };
      return { kind: 'ok', value: event.value, ...(event.functions ? { functions: event.functions } : {}) };
    }
    // SIGINT from the user code itself: the call failed with it, as with one request per step.
    if ('interrupted' in event) return { kind: 'error', error: INTERRUPTED };
    const message = `unexpected protocol message from the runtime (expected the result of ${fn})`;
    this.proc.kill('protocol', message);
    return { kind: 'died', died: new ProcessDied('protocol', message) };
  }
}
