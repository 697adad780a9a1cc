/**
 * POST /api/v1/query/execute (spec 4.10): one read-only statement against the system a connection
 * item points at. The route (query-side/query/) checks the caller, the connection's access and the
 * statement, resolves the connection's fields (synonyms, provider prefixes), then hands the work to
 * the target of its kind. Only `ops/` builds targets and their clients (pg, mysql2, cloud SDKs,
 * DuckDB); one adapter file per target.
 */

/** What every target answers: rows already capped at `maxRows` and `maxBytes` (row_count counts the rows returned). */
export interface QueryResult {
  columns: string[];
  /** JSON-safe values (docs: timestamps ISO 8601, big integers and decimals as strings beyond 2^53, binary as base64). */
  rows: unknown[][];
  row_count: number;
  truncated: boolean;
}

export interface QueryRequest {
  sql: string;
  /** The spec's cap: 10,000. A target reads at most maxRows + 1 rows (to know it truncated), never the whole result. */
  maxRows: number;
  /**
   * QUERY_MAX_BYTES: the answer's JSON at most (shared/query/answerBudget.ts). Targets offer rows to
   * an AnswerBudget as they read them and stop reading where it stops them.
   */
  maxBytes: number;
  /** The spec's 2 minutes (shortened in tests): past it the target stops the statement and throws QueryTargetError('timeout'). */
  statementTimeoutMs: number;
  /** Connecting (and authenticating) longer than this: QueryTargetError('unreachable'). */
  connectTimeoutMs: number;
  /** The client went away: stop and free everything. */
  signal: AbortSignal;
}

/** The connection as a target needs it: its canonical type (connection.postgresql, .mysql, .aws, .gcp, .azure) and its fields by canonical name. */
export interface ResolvedConnection {
  itemType: string;
  /** Canonical parameter name (host, port, user, region, output_location, ...) -> value, synonyms already resolved (first match wins). */
  params: Readonly<Record<string, unknown>>;
}

export interface QueryTarget {
  execute(request: QueryRequest): Promise<QueryResult>;
}

/** Builds the target for a connection; throws QueryTargetError('bad_connection') when its kind has no target or a required field is missing. */
export type QueryTargetFactory = (connection: ResolvedConnection) => QueryTarget;

/**
 * How a target failed, mapped by the route to the spec's statuses: `sql` 400 (the database's
 * message), `bad_connection` 400 (the message lists the keys found, never values), `unreachable` 502
 * (bad credentials, host unreachable, connect timeout), `timeout` 504.
 */
export type QueryFailureKind = 'sql' | 'bad_connection' | 'unreachable' | 'timeout';

export class QueryTargetError extends Error {
  constructor(
    readonly kind: QueryFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'QueryTargetError';
  }
}
