import { QueryTargetError, type QueryTargetFactory } from '../../shared/ports/QueryTarget.ts';
import type { QueryableType } from '../../shared/query/resolveConnection.ts';
import { postgresTarget } from './PostgresTarget.ts';
import { mysqlTarget } from './MysqlTarget.ts';
import { cloudTargetFactories } from './cloudTargets.ts';

/**
 * The query targets by canonical connection type (spec 4.10): the one place that knows which
 * adapter serves which connection. Each adapter builds its own client per request; nothing here
 * is shared between requests.
 */
export const QUERY_TARGETS: Readonly<Partial<Record<QueryableType, QueryTargetFactory>>> = {
  'connection.postgresql': postgresTarget,
  'connection.mysql': mysqlTarget,
  // aws (Athena, Redshift Data, S3), gcp (BigQuery, GCS), azure (Blob): ops/query/cloudTargets.ts.
  ...cloudTargetFactories,
};

/** The factory the route uses: the connection's type picks its target; a type without one is a 400. */
export const queryTargetFactory =
  (targets: Readonly<Partial<Record<string, QueryTargetFactory>>> = QUERY_TARGETS): QueryTargetFactory =>
  (connection) => {
    const factory = targets[connection.itemType];
    if (!factory) throw new QueryTargetError('bad_connection', `Connections of type ${connection.itemType} cannot be queried yet`);
    return factory(connection);
  };
