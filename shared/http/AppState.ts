import type { ParameterizedContext } from 'koa';
import { unauthorized } from '../errors.ts';
import type { Principal } from '../ports/Principal.ts';

/** What middleware puts on `ctx.state` for the route handlers. */
export interface AppState {
  principal?: Principal;
  /** Ties the request's log lines and events together (`metadata.correlation_id`). */
  correlationId: string;
  /**
   * Why the body parser refused the body, on routes that answer such failures themselves
   * (AppParts.bodyErrorRoutes); the body is then undefined.
   */
  bodyError?: string;
}

export type AppContext = ParameterizedContext<AppState>;

export const principalOf = (ctx: { state: AppState }): Principal => {
  if (!ctx.state.principal) throw unauthorized();
  return ctx.state.principal;
};
