/**
 * Traces of the runs a request causes (ops/tracing: OpenTelemetry). A run's trace goes from the
 * HTTP request through its dispatch, across the bus (the returned headers), to the worker's pick-up,
 * run and end. Every method records and returns at once, never throws; absent when tracing is off.
 */
export interface RunTracing {
  /**
   * A run is being sent to the workers: a dispatch span, child of the request whose correlation id
   * caused it when that request is being answered, else the root of a trace of its own (a scheduled
   * run, a slot freed by another run's end). Returns the headers that carry it on the bus.
   */
  dispatched(taskLaui: string, correlationId: string): Readonly<Record<string, string>> | undefined;
  /** A worker took a run: its spans, children of the dispatch the message's headers name. */
  worker(taskLaui: string, headers: Readonly<Record<string, string>> | undefined): RunSpans;
}

export type RunStep = 'pickup' | 'run' | 'end';

export interface RunSpans {
  /** One step of the run, timed as a span: its error, if it throws, is recorded and thrown on. */
  step<T>(step: RunStep, work: () => Promise<T>, attributes?: Readonly<Record<string, string | number | boolean>>): Promise<T>;
  /** The run is over (its state, or the error that ended the delivery). */
  finish(state: string | null, error?: unknown): void;
}
