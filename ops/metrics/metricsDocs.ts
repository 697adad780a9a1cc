import { detail, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { METRICS_PATH } from './metricsRoutes.ts';

/** The OpenAPI docs of metricsRoutes (README, Operations: Metrics). */
export const metricsDocs: RouteDocs = {
  tag: 'Metrics',
  description: "This process's Prometheus metrics (README, Operations: Metrics; docs/grafana-dashboard.json).",
  auth: 'bearer',
  routes: [
    {
      method: 'GET',
      path: METRICS_PATH,
      summary: "This process's metrics in the Prometheus text format",
      description:
        "Bearer: METRICS_TOKEN, or an administrator's access token. The orchestrator_* families (task runs by state, run time, queue wait, worker slots, HTTP requests by route template, event-store appends, projection lag) and the default process_* and nodejs_* ones. Each role of the distributed mode serves its own. With METRICS_PORT set it is served on 127.0.0.1:METRICS_PORT instead (without credentials unless METRICS_TOKEN is set) and this port answers 404.",
      responses: {
        200: { description: 'The exposition (text format 0.0.4)', contentType: 'text/plain; version=0.0.4', schema: { type: 'string' } },
        403: detail("Access denied: the token is not an administrator's"),
        404: detail('Not Found: METRICS_PORT serves the metrics on a port of their own'),
      },
    },
  ],
};
