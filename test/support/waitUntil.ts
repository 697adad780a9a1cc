/**
 * Polls until `condition` holds, for tests of asynchronous delivery; fails with `what` so that a
 * timeout says which expectation was never met rather than just "timeout". The deadline only ends a
 * wait that would never succeed, never a check of speed: the default is generous for a loaded machine.
 */
export const waitUntil = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting until ${what}`);
    await sleep(5);
  }
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
