import type { ActionOutcome, OperatorOutcome, RunLimits } from '../../shared/ports/CodeRunner.ts';
import type { CallResult } from './Driver.ts';

export type Output = Record<string, unknown>;
type WithoutLog<T> = T extends unknown ? Omit<T, 'logs' | 'logsTruncated'> : never;
export type OperatorResult = WithoutLog<OperatorOutcome>;
export type ActionResult = WithoutLog<ActionOutcome>;

/** What stopped a run before its code was ready to call. */
export type Failure =
  | { kind: 'invalid'; message: string }
  | { kind: 'error'; message: string; traceback?: string }
  | { kind: 'timeout'; message: string }
  | { kind: 'cancelled' };

/** A load's result: the functions when the code defines run, else why the run cannot go on. */
export function loadOutcome(loaded: CallResult, limits: RunLimits): { functions: string[] } | Failure {
  switch (loaded.kind) {
    case 'ok': {
      const functions = loaded.functions ?? [];
      if (!functions.includes('run')) return { kind: 'invalid', message: 'invalid code: no run function is defined' };
      return { functions };
    }
    case 'error':
      if (loaded.error.invalid) return { kind: 'invalid', message: `invalid code: ${loaded.error.message}` };
      return { kind: 'error', message: `loading the code failed: ${loaded.error.message}`, traceback: loaded.error.traceback };
    case 'timeout':
      return { kind: 'timeout', message: `time limit of ${limits.timeoutMs} ms exceeded while loading the code` };
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'died':
      return { kind: 'error', message: loaded.died.message };
  }
}

export function operatorFailure(failure: Failure): OperatorResult {
  switch (failure.kind) {
    case 'invalid':
      return { status: 'fail', output: { error: failure.message }, message: failure.message };
    case 'error':
      return { status: 'error', output: failure.traceback ? { error: failure.message, traceback: failure.traceback } : { error: failure.message }, message: failure.message };
    case 'timeout':
      return { status: 'timeout', output: {}, message: failure.message };
    case 'cancelled':
      return { status: 'cancelled', output: {} };
  }
}

export function callFailure(result: Exclude<CallResult, { kind: 'ok' }>, fn: string, limits: RunLimits, last: Output | null): OperatorResult {
  switch (result.kind) {
    case 'error': {
      const output: Output = { error: result.error.message };
      if (result.error.traceback) output.traceback = result.error.traceback;
      return { status: 'error', output, message: `${fn} failed: ${result.error.message}` };
    }
    case 'timeout':
      return hardTimeout(limits, fn, last);
    case 'cancelled':
      return { status: 'cancelled', output: last ?? {} };
    case 'died':
      return { status: 'error', output: { error: result.died.message }, message: `${fn} failed: ${result.died.message}` };
  }
}

export function hardTimeout(limits: RunLimits, during: string, last: Output | null): OperatorResult {
  return { status: 'timeout', output: last ?? {}, message: `time limit of ${limits.timeoutMs} ms exceeded during ${during}` };
}

export function describeCall(result: Exclude<CallResult, { kind: 'ok' }>, fn: string, timeoutMs: number): string {
  switch (result.kind) {
    case 'error':
      return result.error.message;
    case 'timeout':
      return `time limit of ${timeoutMs} ms exceeded while running ${fn}`;
    case 'cancelled':
      return `${fn} was cancelled`;
    case 'died':
      return result.died.message;
  }
}

export function outputExceeded(limits: RunLimits): string {
  return `output limit exceeded: the code wrote more than ${limits.maxOutputBytes} bytes to stdout/stderr`;
}

export function isRecord(value: unknown): value is Output {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
