import type Router from '@koa/router';
import type { AppState } from '../../shared/http/AppState.ts';

/**
 * What one role adds to a process (DESIGN §1): the routes it serves, what it starts once the
 * server listens, and its part of the bounded stop. ops/service.ts starts the parts of the role it
 * was given in order and stops them in reverse; every hook is optional.
 */
export interface RolePart {
  /** The REST routes (api only): public ones, those whose body errors they answer themselves, and those behind the Bearer wall. */
  routes?: { publicRoutes: Router<AppState>[]; bodyErrorRoutes: Router<AppState>[]; privateRoutes: Router<AppState>[] };
  /** Once the server listens, before the process says it is ready. */
  start?(): Promise<void>;
  /** After every role's start: work that needs the whole process up (the log's publication, a rebuild). */
  startLate?(): Promise<void>;
  /** The stop begins: take no more work, at once. */
  stopTaking?(): void;
  /** What the graceful stop waits for (bounded by SHUTDOWN_GRACE_SECONDS). */
  pending?(): Array<{ name: string; done: Promise<unknown> }>;
  /** After the grace, before the kernel closes the bus and the runner. */
  close?(): Promise<void>;
  /** After the kernel's work is closed, before its stores are: the read models as the stop left them. */
  closeLast?(): Promise<void>;
}
