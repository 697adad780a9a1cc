import type { CallResult, Driver } from './Driver.ts';
import type { RunControl } from './RunControl.ts';
import type { RuntimeProcess, WireRequest } from './RuntimeProcess.ts';

/** One request per step: load, each call, finish; the runner sleeps between polls. */
export class StepDriver implements Driver {
  constructor(
    /** invokeRequest (invokeRequest.ts) on this run's process. */
    private readonly invoke: (message: WireRequest, deadline: number, control: RunControl | null) => Promise<CallResult>,
    private readonly proc: RuntimeProcess,
    private readonly file: string,
    private readonly args: unknown[],
    private readonly control: RunControl,
    private readonly pollIntervalMs: number,
  ) {}

  load(): Promise<CallResult> {
    return this.invoke({ op: 'load', file: this.file, dir: this.proc.dir }, this.control.deadline, this.control);
  }

  call(fn: string, deadline: number): Promise<CallResult> {
    return this.invoke({ op: 'call', fn, args: this.args }, deadline, this.control);
  }

  async pause(completionDeadline: number): Promise<'poll' | 'completion' | 'deadline' | 'cancelled'> {
    if (Date.now() >= completionDeadline) return 'completion';
    const waited = await this.control.sleepUntil(Math.min(Date.now() + this.pollIntervalMs, completionDeadline));
    return waited === 'slept' ? 'poll' : waited;
  }

  finish(deadline: number): Promise<CallResult> {
    return this.invoke({ op: 'call', fn: 'finish', args: this.args }, deadline, null);
  }
}
