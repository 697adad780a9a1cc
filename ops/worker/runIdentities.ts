import type { RunAs } from './sandbox.ts';

/**
 * The default identity range for user code when the service runs as root: uids and gids
 * 64000-64999 (no account in /etc/passwd needs to exist; Debian leaves 60000-64999 unassigned
 * locally, and the range stays below 65536, inside the default mapping of a user-namespaced container).
 */
export const DEFAULT_RUN_AS = { uid: 64_000, gid: 64_000, count: 1000 } as const;

/** A range of identities: `count` consecutive uids from `uid`, each with the gid of the same offset from `gid`. */
export interface RunAsRange extends RunAs {
  count: number;
}

/** A process waiting for an identity (RunIdentities.wait). */
export interface IdentityWait {
  /** A run waits on this process now: it goes before every process started ahead of demand. */
  hurry(): void;
  /** The process is gone before it got one: out of the line. */
  cancel(): void;
}

interface Waiter {
  give(identity: RunAs): void;
  urgent: boolean;
}

/**
 * One identity per live runtime process, so that a run cannot signal, ptrace or read /proc of
 * another run's process (which may hold another user's decrypted connection): processes of
 * different uids are out of each other's reach. Never shared: when every identity of the range is
 * held, take() gives none and the process waits in line (wait) until one is released; a range of
 * one serves one process at a time. Free identities are handed out least recently released first,
 * so that a uid comes back as late as possible. In the line, processes a run waits on (hurry) go
 * before those the warm pool starts ahead of demand; each kind in the order it came.
 */
export class RunIdentities {
  private readonly free: RunAs[] = [];
  private readonly taken = new Set<number>();
  /** Processes a run waits on, then processes started ahead of demand. */
  private readonly urgent: Waiter[] = [];
  private readonly background: Waiter[] = [];

  constructor(readonly range: RunAsRange) {
    for (let i = 0; i < range.count; i += 1) this.free.push({ uid: range.uid + i, gid: range.gid + i });
  }

  /** A free identity, now (a shift and a set insert: on every process start), or null when all are held. */
  take(): RunAs | null {
    const identity = this.free.shift();
    if (!identity) return null;
    this.taken.add(identity.uid);
    return identity;
  }

  /**
   * In line for the next released identity, handed to `give` (never synchronously from this call).
   * Call it after take() gave none.
   */
  wait(give: (identity: RunAs) => void): IdentityWait {
    const waiter: Waiter = { give, urgent: false };
    this.background.push(waiter);
    return {
      hurry: () => {
        if (waiter.urgent || !remove(this.background, waiter)) return;
        waiter.urgent = true;
        this.urgent.push(waiter);
      },
      cancel: () => {
        remove(waiter.urgent ? this.urgent : this.background, waiter);
      },
    };
  }

  /** The identity's process is gone (and all it started): to the first in line, else back to the free ones. */
  release(identity: RunAs): void {
    if (!this.taken.delete(identity.uid)) return;
    const next = this.urgent.shift() ?? this.background.shift();
    if (!next) {
      this.free.push(identity);
      return;
    }
    this.taken.add(identity.uid);
    next.give(identity);
  }

  /** Processes in line for an identity: all of them, and those a run waits on. */
  get waiting(): { all: number; urgent: number } {
    return { all: this.urgent.length + this.background.length, urgent: this.urgent.length };
  }

  /** Identities held by live processes. */
  get held(): number {
    return this.taken.size;
  }
}

function remove<T>(list: T[], item: T): boolean {
  const at = list.indexOf(item);
  if (at === -1) return false;
  list.splice(at, 1);
  return true;
}
