import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import { errorMiddleware } from '../http/errorMiddleware.ts';
import { METRICS_PATH } from './metricsRoutes.ts';
import type Router from '@koa/router';

export interface MetricsServer {
  /** Where Prometheus scrapes: http://127.0.0.1:<port>/metrics. */
  url: string;
  close(): Promise<void>;
}

/**
 * METRICS_PORT: /metrics alone, on the loopback interface, apart from the API (which then does not
 * serve it): a scraper on the same host (or a sidecar) reads it, nothing off the host can. Its
 * answers are the same `{detail}` errors as the API's; every other path is 404.
 */
export const startMetricsServer = async (options: { port: number; routes: Router<AppState>; logger: Logger }): Promise<MetricsServer> => {
  const app = new Koa<AppState>();
  app.silent = true;
  app.use(errorMiddleware({ logger: options.logger }));
  app.use(options.routes.routes()).use(options.routes.allowedMethods());
  const server = createServer(app.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${METRICS_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
};
