/**
 * "Something was appended", as a version counter plus listeners. A waiter notes `version` BEFORE
 * it reads the log and waits only if nothing was appended since, so an append that commits between
 * its read and its wait still wakes it. Listeners (rather than one shared promise) let an idle
 * waiter that times out detach, instead of piling up callbacks on a promise that never settles.
 */
export class AppendSignal {
  private appended = 0;
  private readonly listeners = new Set<() => void>();

  get version(): number {
    return this.appended;
  }

  notify(): void {
    this.appended += 1;
    for (const listener of [...this.listeners]) listener();
  }

  /** Returns the function that detaches the listener. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
