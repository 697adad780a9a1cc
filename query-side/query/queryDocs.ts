import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { BODY_SCHEMA } from './queryRoute.ts';

/** The OpenAPI docs of queryRoutes (spec 4.10). */
export const queryDocs: RouteDocs = {
  tag: 'Query',
  description: 'Read-only SQL against the system a connection item points at (an experimental preview).',
  auth: 'bearerOrCookie',
  schemas: { QueryExecute: BODY_SCHEMA },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/query/execute',
      summary: 'Run one read-only statement against a connection',
      description:
        'SELECT, WITH or EXPLAIN (DESCRIBE too on the embedded engine); INSERT, UPDATE, DELETE, DROP, CREATE, ALTER, TRUNCATE, GRANT and REVOKE are refused, as are INTO and functions that act outside a read-only query (large objects, server files, notifications, dblink, LOAD_FILE). At most 10,000 rows and 32 MiB of JSON (QUERY_MAX_BYTES; truncated true); a value larger than that is cut and ends with `…[value cut: N bytes]`. At most 2 minutes. Needs VIEW on the connection.',
      body: { schema: BODY_SCHEMA },
      responses: {
        200: json(
          'The rows',
          objectOf({
            columns: { type: 'array', items: { type: 'string' } },
            rows: { type: 'array', items: { type: 'array' } },
            row_count: { type: 'integer', description: 'After truncation' },
            truncated: { type: 'boolean' },
          }),
        ),
        400: detail('A statement that is not allowed, a connection lacking fields (the keys found are listed), or an SQL error of the target'),
        404: detail('Item not found with laui: <laui> (missing, deleted, not a connection, or not visible to the caller)'),
        502: detail('The target cannot be reached (credentials, host, connect timeout), or broke the protocol (a message the service does not read at that size, one the driver could not parse)'),
        504: detail('The query ran longer than 2 minutes'),
      },
    },
  ],
};
