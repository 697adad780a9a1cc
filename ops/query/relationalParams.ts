import type { ConnectionOptions } from 'node:tls';
import { QueryTargetError, type ResolvedConnection } from '../../shared/ports/QueryTarget.ts';

/** What a PostgreSQL or MySQL target connects with. */
export interface RelationalParams {
  host: string;
  port: number;
  user: string;
  /** '' when the content has none: never the service's own (PGPASSWORD, ~/.pgpass). */
  password: string;
  database: string | null;
  charset: string | null;
  /** null: plain TCP. */
  tls: ConnectionOptions | null;
}

const text = (params: ResolvedConnection['params'], name: string): string | null => {
  const value = params[name];
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new QueryTargetError('bad_connection', `Connection field ${name} must be a string`);
};

/**
 * sslmode (an extension of the spec's table, libpq's names): disable, allow, prefer or false: plain
 * TCP (a library cannot fall back, so allow and prefer do not try TLS); require or true: TLS without
 * checking the certificate (as libpq); verify-ca: the chain is checked, not the name; verify-full:
 * chain and host name.
 */
const tlsOf = (mode: unknown, host: string): ConnectionOptions | null => {
  const value = typeof mode === 'string' ? mode.toLowerCase() : mode;
  if (value === undefined || value === false || value === 'disable' || value === 'allow' || value === 'prefer' || value === 'false') return null;
  if (value === true || value === 'require' || value === 'true') return { rejectUnauthorized: false };
  if (value === 'verify-ca') return { rejectUnauthorized: true, checkServerIdentity: () => undefined };
  if (value === 'verify-full') return { rejectUnauthorized: true, servername: host };
  throw new QueryTargetError('bad_connection', 'Connection field sslmode must be disable, require, verify-ca or verify-full');
};

/** The resolved fields of a relational connection, checked; QueryTargetError('bad_connection') names a malformed one. */
export const relationalParams = (connection: ResolvedConnection, defaultPort: number): RelationalParams => {
  const { params } = connection;
  const host = text(params, 'host');
  const user = text(params, 'user');
  // resolveConnection already refused these absent; a target built directly still gets a clear 400.
  if (host === null || user === null) throw new QueryTargetError('bad_connection', 'Connection content lacks required fields: host, user');
  const portText = text(params, 'port');
  const port = portText === null ? defaultPort : Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new QueryTargetError('bad_connection', 'Connection field port must be an integer from 1 to 65535');
  return {
    host,
    port,
    user,
    password: text(params, 'password') ?? '',
    database: text(params, 'database'),
    charset: text(params, 'charset'),
    tls: tlsOf(params.sslmode, host),
  };
};
