import type { Laui } from '../../shared/ids.ts';

/** What workers, the reaper and diagnose use: HeartbeatStore, or a relay of it across processes. */
export interface TaskHeartbeats {
  beat(taskLaui: Laui, at: Date): void;
  last(taskLaui: Laui): Date | null;
  forget(taskLaui: Laui): void;
}

/**
 * Task heartbeats are high-frequency liveness, kept out of the item streams (DESIGN §3): in memory
 * for the embedded mode. After a restart a lease has no heartbeat and is judged by its lease time.
 */
export class HeartbeatStore implements TaskHeartbeats {
  private readonly beats = new Map<Laui, number>();

  beat(taskLaui: Laui, at: Date): void {
    this.beats.set(taskLaui, at.getTime());
  }

  last(taskLaui: Laui): Date | null {
    const at = this.beats.get(taskLaui);
    return at === undefined ? null : new Date(at);
  }

  forget(taskLaui: Laui): void {
    this.beats.delete(taskLaui);
  }
}
