import type { OperatorRunRequest } from '../../shared/ports/CodeRunner.ts';
import type { Driver } from './Driver.ts';
import type { RunControl } from './RunControl.ts';
import { callFailure, hardTimeout, isRecord, type OperatorResult, type Output } from './runOutcome.ts';

/** check_completion every pollIntervalMs until success/failed, the completion timeout or the time limit. */
export async function pollCompletion(request: OperatorRunRequest, control: RunControl, driver: Driver, state: { last: Output | null }): Promise<OperatorResult> {
  const completionDeadline = Date.now() + request.checkCompletionTimeoutMs;
  const completionTimeout = (): OperatorResult => ({
    status: 'timeout',
    output: state.last ?? {},
    message: `check_completion did not report success or failed within ${request.checkCompletionTimeoutMs} ms`,
  });
  for (;;) {
    const checked = await driver.call('check_completion', Math.min(control.deadline, completionDeadline));
    if (checked.kind === 'timeout' && completionDeadline < control.deadline) return completionTimeout();
    if (checked.kind !== 'ok') return callFailure(checked, 'check_completion', request.limits, state.last);
    const value = checked.value;
    const status = isRecord(value) && typeof value.status === 'string' ? value.status.toLowerCase() : null;
    if (!isRecord(value) || status === null) {
      const message = 'check_completion must return an object with a status (running, success or failed)';
      return { status: 'error', output: { error: message, returned: value ?? null }, message };
    }
    if (status === 'success') return { status: 'success', output: value };
    if (status === 'failed') return { status: 'error', output: value, message: failedMessage(value) };
    if (status !== 'running') {
      const message = `check_completion returned an unknown status: ${value.status} (expected running, success or failed)`;
      return { status: 'error', output: value, message };
    }
    state.last = value;
    const next = await driver.pause(completionDeadline);
    if (next === 'completion') return completionTimeout();
    if (next === 'cancelled') return { status: 'cancelled', output: state.last };
    if (next === 'deadline') return hardTimeout(request.limits, 'check_completion polling', state.last);
  }
}

function failedMessage(value: Output): string {
  for (const key of ['message', 'error', 'reason']) {
    const text = value[key];
    if (typeof text === 'string' && text) return `check_completion returned status failed: ${text}`;
  }
  return 'check_completion returned status failed';
}
