import type { Middleware } from 'koa';
import Router from '@koa/router';
import { AppError, badRequest, notFound } from '../../shared/errors.ts';
import { principalOf, type AppState } from '../../shared/http/AppState.ts';
import type { Laui } from '../../shared/ids.ts';
import { QueryTargetError, type QueryFailureKind, type QueryResult, type QueryTargetFactory } from '../../shared/ports/QueryTarget.ts';
import type { SecretBox } from '../../shared/ports/SecretBox.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import { openSecretField } from '../../shared/item-types/secretFields.ts';
import { requireObjectBody, validateRequest, lauiSchema } from '../../shared/validation/validateRequest.ts';
import { summarised } from '../../shared/validation/boundedDetail.ts';
import { checkStatement, DEFAULT_LEADING_WORDS, type StatementRules } from '../../shared/query/checkStatement.ts';
import { resolveConnection, type QueryMode } from '../../shared/query/resolveConnection.ts';

export const QUERY_EXECUTE_PATH = '/api/v1/query/execute';

/** POST /api/v1/query/execute's limits (spec 8; QUERY_* settings). */
export interface QuerySettings {
  /** 2 minutes (spec): then 504. */
  statementTimeoutMs: number;
  /** 10 seconds (spec): connecting and signing in longer is 502. */
  connectTimeoutMs: number;
  /** 10,000 (spec): rows beyond are not read; truncated true. */
  maxRows: number;
  /** QUERY_MAX_BYTES (32 MiB): the answer's JSON at most; rows stop there, truncated true (shared/query/answerBudget.ts). */
  maxBytes: number;
}

export interface QueryRouteDeps {
  items: Pick<Collection<ItemDoc>, 'peek'>;
  access: Pick<AccessControl, 'can'>;
  secrets: SecretBox;
  /** Builds the target of a resolved connection (ops/query/queryTargets.ts). */
  targets: QueryTargetFactory;
  settings: QuerySettings;
  /** Bearer, frontend_token cookie or session cookie (spec 5.2): 401 without one. */
  authenticate: Middleware<AppState>;
}

export const BODY_SCHEMA = {
  type: 'object',
  required: ['connection_laui', 'sql'],
  properties: { connection_laui: lauiSchema, sql: { type: 'string', minLength: 1 } },
} as const;

/** The status of each failure kind of a target (spec 4.10's table). */
const STATUS: Readonly<Record<QueryFailureKind, number>> = { sql: 400, bad_connection: 400, unreachable: 502, timeout: 504 };

/** Which SQL the connection's engine reads: the relational servers' own lexing, else the generic one; the embedded engine also answers DESCRIBE (spec 4.10). */
export const statementRulesFor = (mode: QueryMode): StatementRules => {
  if (mode === 'postgresql' || mode === 'mysql') return { dialect: mode };
  const embedded = mode === 's3' || mode === 'gcs' || mode === 'azure_blob';
  return { dialect: 'generic', leadingWords: embedded ? [...DEFAULT_LEADING_WORDS, 'DESCRIBE'] : DEFAULT_LEADING_WORDS };
};

/**
 * POST /api/v1/query/execute (spec 4.10): one read-only statement against the system a connection
 * item points at. In order: the caller (401), the body (422), the connection (404 when it does not
 * exist, is deleted, is not a connection or the caller cannot VIEW it: one answer, so that the
 * route does not tell which), its fields (400 listing the keys found), the statement (400), then
 * the target (400 SQL error, 502 unreachable, 504 timeout). The connection's sealed content is
 * opened here, in memory, for this request only; it never reaches a log or a response.
 */
export const queryRoutes = (deps: QueryRouteDeps): Router<AppState> => {
  const router = new Router<AppState>();
  router.post(QUERY_EXECUTE_PATH, deps.authenticate, async (ctx) => {
    const principal = principalOf(ctx);
    const body = validateRequest<{ connection_laui: Laui; sql: string }>(BODY_SCHEMA, requireObjectBody(ctx.request.body));
    const laui = body.connection_laui;
    const item = await deps.items.peek(laui);
    const isConnection = item !== null && (item.item_type === 'connection' || item.item_type.startsWith('connection.'));
    if (!item || !isConnection || item.is_deleted || !(await deps.access.can(principal, item, 'VIEW'))) throw notFound(`Item not found with laui: ${laui}`);

    let result: QueryResult;
    const gone = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) gone.abort();
    };
    ctx.res.once('close', onClose);
    try {
      const connection = resolveConnection(item.item_type, openSecretField(item.content ?? null, deps.secrets));
      const check = checkStatement(body.sql, statementRulesFor(connection.mode));
      if (!check.ok) throw badRequest(check.reason);
      const target = deps.targets(connection);
      result = await target.execute({
        sql: body.sql,
        maxRows: deps.settings.maxRows,
        maxBytes: deps.settings.maxBytes,
        statementTimeoutMs: deps.settings.statementTimeoutMs,
        connectTimeoutMs: deps.settings.connectTimeoutMs,
        signal: gone.signal,
      });
    } catch (error) {
      // An unreachable or slow target's failure is summarised (one line, at most 200 characters):
      // the host is the connection's, so it may be any server the service can reach.
      if (error instanceof QueryTargetError) throw new AppError(STATUS[error.kind], STATUS[error.kind] >= 500 ? summarised(error.message) : error.message);
      throw error;
    } finally {
      ctx.res.off('close', onClose);
    }
    ctx.status = 200;
    ctx.set('cache-control', 'no-store');
    ctx.body = result;
  });
  return router;
};
