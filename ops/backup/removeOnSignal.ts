import { rmSync } from 'node:fs';

const SIGNALS: ReadonlyArray<NodeJS.Signals> = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Removes `paths` when the process is interrupted (Ctrl-C, kill) before `dispose` is called, then
 * dies of the same signal. A backup's or a restore's work folder holds copies of the keys: without
 * this, Node's default handling of SIGINT would exit at once and leave them beside the target.
 */
export const removeOnSignal = (paths: ReadonlyArray<string>): (() => void) => {
  const onSignal = (signal: NodeJS.Signals): void => {
    dispose();
    for (const path of paths) rmSync(path, { recursive: true, force: true });
    // No listener left: the signal again ends the process as it would have (exit status 128 + n).
    process.kill(process.pid, signal);
  };
  const dispose = (): void => {
    for (const signal of SIGNALS) process.off(signal, onSignal);
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
  return dispose;
};
