import type Router from '@koa/router';
import type Koa from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';

export interface Route {
  method: string;
  path: string;
}

/**
 * Every method and path the app's routers serve (HEAD is GET's twin), read from the app itself:
 * a spec that walks them covers a new route without being edited.
 */
export const routesOf = (app: Koa<AppState>): Route[] => {
  const routes = new Map<string, Route>();
  for (const middleware of app.middleware) {
    const router = (middleware as { router?: Router<AppState> }).router;
    if (!router) continue;
    for (const layer of router.stack) {
      if (typeof layer.path !== 'string') continue;
      for (const method of layer.methods) if (method !== 'HEAD') routes.set(`${method} ${layer.path}`, { method, path: layer.path });
    }
  }
  return [...routes.values()];
};
