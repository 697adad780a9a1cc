import { QueryTargetError, type ResolvedConnection } from '../ports/QueryTarget.ts';
import { CONNECTION_ALIASES } from '../item-types/schemas/connection.ts';

/**
 * The field names of a connection's free-form `content` (spec 4.10's synonyms table), resolved to
 * the canonical parameter names a query target reads.
 *
 * Rules:
 *  - for each parameter, the accepted names are tried in the listed order and the first present
 *    wins; then the same names with a provider prefix (`<prefix>_<name>`, each prefix in turn, in
 *    the same order): the listed, unprefixed names come first;
 *  - prefixes: the connection's kind and the aliases the catalog accepts for it (PREFIXES below):
 *    `postgresql_host`, `pg_port`, `mysql_password`, `mariadb_user`, `aws_region`,
 *    `athena_output_location`, `gcp_project`, `bigquery_dataset`, `azure_account_name`, ...;
 *  - names are compared without regard to letter case (`Host`, `PASSWORD`); when two keys differ
 *    only in case, the all-lowercase one wins;
 *  - a value of null or an empty string is absent (the next name is tried);
 *  - only top-level keys count; values are passed as they are (targets check their types).
 */

export interface ParameterNames {
  name: string;
  names: ReadonlyArray<string>;
}

/** How a connection is queried (spec 4.10, mode detection). */
export type QueryMode = 'postgresql' | 'mysql' | 'athena' | 'redshift' | 's3' | 'bigquery' | 'gcs' | 'azure_blob';

const p = (name: string, ...names: string[]): ParameterNames => ({ name, names });

/** rdb_a (connection.postgresql). */
const RELATIONAL: ReadonlyArray<ParameterNames> = [
  p('host', 'host', 'hostname', 'server', 'db_host'),
  p('port', 'port', 'db_port'),
  p('database', 'database', 'dbname', 'db', 'db_name', 'schema'),
  p('user', 'user', 'username', 'usr', 'login', 'db_user'),
  p('password', 'password', 'pass', 'passwd', 'pwd', 'secret'),
  // Not in the spec's table: TLS for PostgreSQL and MySQL servers that require it (README).
  p('sslmode', 'sslmode', 'ssl_mode', 'ssl'),
];

/** rdb_b (connection.mysql): rdb_a plus charset. */
const RELATIONAL_WITH_CHARSET: ReadonlyArray<ParameterNames> = [...RELATIONAL, p('charset', 'charset', 'encoding', 'character_set')];

/** cloud_a (connection.aws). */
const AWS: ReadonlyArray<ParameterNames> = [
  p('region', 'region', 'region_name'),
  p('access_key', 'access_key', 'access_key_id', 'key_id'),
  p('secret_key', 'secret_key', 'secret_access_key', 'secret'),
  p('session_token', 'session_token', 'token'),
  p('role_arn', 'assume_iam_role', 'role_arn', 'iam_role', 'role'),
  p('output_location', 'output_location', 's3_output', 's3_path', 'result_location'),
  p('workgroup', 'workgroup', 'work_group'),
  p('database', 'database', 'db', 'db_name'),
  p('cluster_identifier', 'cluster_identifier', 'cluster_id'),
  p('workgroup_name', 'workgroup_name', 'serverless_workgroup', 'rs_workgroup'),
];

/** cloud_b (connection.gcp), data-warehouse mode. */
const GCP_WAREHOUSE: ReadonlyArray<ParameterNames> = [
  p('project', 'project', 'project_id'),
  p('credentials', 'credentials_json', 'service_account', 'service_account_key', 'credentials'),
  p('dataset', 'dataset', 'dataset_id', 'default_dataset'),
  p('location', 'location', 'region'),
];

/** cloud_b (connection.gcp), object-storage mode. */
const GCP_STORAGE: ReadonlyArray<ParameterNames> = [p('access_key', 'hmac_access_key', 'access_key'), p('secret_key', 'hmac_secret', 'secret_key'), p('endpoint', 'endpoint')];

/** cloud_c (connection.azure). */
const AZURE: ReadonlyArray<ParameterNames> = [
  p('connection_string', 'connection_string', 'storage_connection_string'),
  p('account_name', 'account_name', 'storage_account'),
  p('account_key', 'account_key', 'storage_key'),
];

/** The canonical connection types that can be queried, and the spec's row for each. */
export const QUERYABLE_TYPES = ['connection.postgresql', 'connection.mysql', 'connection.aws', 'connection.gcp', 'connection.azure'] as const;
export type QueryableType = (typeof QUERYABLE_TYPES)[number];

/** The kind's own name first, then its item_type aliases (connection.pg -> pg), then the provider's short name. */
const PREFIXES: Readonly<Record<QueryableType, ReadonlyArray<string>>> = (() => {
  const prefixes = Object.fromEntries(QUERYABLE_TYPES.map((type) => [type, [type.slice('connection.'.length)]])) as Record<QueryableType, string[]>;
  for (const [alias, type] of Object.entries(CONNECTION_ALIASES)) prefixes[type as QueryableType]?.push(alias.slice('connection.'.length));
  return prefixes;
})();

/**
 * What each mode needs (this service's choice; the spec leaves it open): a relational server needs
 * host and user (port, database and password have defaults: the standard port, the user's name or
 * none, an empty password); Redshift's Data API needs a database; GCS through the embedded engine
 * needs its HMAC key pair; Azure needs a connection string or an account name. The cloud modes
 * otherwise fall back to their default credentials (role, instance chain, application default).
 * A list inside the list: any one of its names.
 */
const REQUIRED: Readonly<Record<QueryMode, ReadonlyArray<string | ReadonlyArray<string>>>> = {
  postgresql: ['host', 'user'],
  mysql: ['host', 'user'],
  athena: ['output_location'],
  redshift: ['database', ['cluster_identifier', 'workgroup_name']],
  s3: [],
  bigquery: ['project'],
  gcs: ['access_key', 'secret_key'],
  azure_blob: [['connection_string', 'account_name']],
};

/** A connection resolved for a query: the port's ResolvedConnection plus how it is queried and the content's key names. */
export interface ResolvedQueryConnection extends ResolvedConnection {
  itemType: QueryableType;
  mode: QueryMode;
  /** The content's top-level key names (never values): what a 400 lists. */
  keys: ReadonlyArray<string>;
}

const isQueryable = (itemType: string): itemType is QueryableType => (QUERYABLE_TYPES as ReadonlyArray<string>).includes(itemType);

/** Key (lower-cased) -> value, the all-lowercase key winning over other spellings. */
const lowerCased = (content: Readonly<Record<string, unknown>>): Map<string, unknown> => {
  const entries = Object.entries(content).filter(([, value]) => value !== null && value !== undefined && value !== '');
  const map = new Map<string, unknown>();
  for (const [key, value] of entries) if (key !== key.toLowerCase() && !map.has(key.toLowerCase())) map.set(key.toLowerCase(), value);
  for (const [key, value] of entries) if (key === key.toLowerCase()) map.set(key, value);
  return map;
};

/** The canonical parameters of `table` found in `content` (synonyms, then prefixed synonyms). */
export const resolveParameters = (content: Readonly<Record<string, unknown>>, table: ReadonlyArray<ParameterNames>, prefixes: ReadonlyArray<string>): Record<string, unknown> => {
  const present = lowerCased(content);
  const params: Record<string, unknown> = {};
  for (const { name, names } of table) {
    const candidates = [...names, ...prefixes.flatMap((prefix) => names.map((synonym) => `${prefix}_${synonym}`))];
    const found = candidates.find((candidate) => present.has(candidate));
    if (found !== undefined) params[name] = present.get(found);
  }
  return params;
};

/** The spec's mode detection, from the parameters already resolved. */
export const queryModeOf = (itemType: QueryableType, params: Readonly<Record<string, unknown>>): QueryMode => {
  switch (itemType) {
    case 'connection.postgresql':
      return 'postgresql';
    case 'connection.mysql':
      return 'mysql';
    case 'connection.aws':
      if (params.output_location !== undefined) return 'athena';
      return params.cluster_identifier !== undefined || params.workgroup_name !== undefined ? 'redshift' : 's3';
    case 'connection.gcp':
      return params.project !== undefined ? 'bigquery' : 'gcs';
    case 'connection.azure':
      return 'azure_blob';
  }
};

const tableOf = (itemType: QueryableType, content: Readonly<Record<string, unknown>>, prefixes: ReadonlyArray<string>): ReadonlyArray<ParameterNames> => {
  switch (itemType) {
    case 'connection.postgresql':
      return RELATIONAL;
    case 'connection.mysql':
      return RELATIONAL_WITH_CHARSET;
    case 'connection.aws':
      return AWS;
    case 'connection.gcp':
      // The mode follows from `project`; each mode reads its own row of the table.
      return resolveParameters(content, GCP_WAREHOUSE.slice(0, 1), prefixes).project !== undefined ? GCP_WAREHOUSE : GCP_STORAGE;
    case 'connection.azure':
      return AZURE;
  }
};

/** "host, user" / "none": key names only, never values. */
export const keyList = (keys: ReadonlyArray<string>): string => (keys.length === 0 ? 'none' : keys.join(', '));

/**
 * The connection item's content resolved for a query, or QueryTargetError('bad_connection') (400)
 * when its type cannot be queried, its content is not an object or a required field is missing;
 * the message names the missing parameters and lists the keys found, never their values.
 */
export const resolveConnection = (itemType: string, content: unknown): ResolvedQueryConnection => {
  if (!isQueryable(itemType)) {
    throw new QueryTargetError('bad_connection', `Connections of type ${itemType} cannot be queried (supported: ${QUERYABLE_TYPES.join(', ')})`);
  }
  if (content === null || typeof content !== 'object' || Array.isArray(content)) {
    throw new QueryTargetError('bad_connection', 'Connection content must be an object of connection fields (keys found: none)');
  }
  const fields = content as Readonly<Record<string, unknown>>;
  const keys = Object.keys(fields);
  const prefixes = PREFIXES[itemType];
  const params = resolveParameters(fields, tableOf(itemType, fields, prefixes), prefixes);
  const mode = queryModeOf(itemType, params);
  const missing = REQUIRED[mode].filter((required) => (typeof required === 'string' ? params[required] === undefined : required.every((name) => params[name] === undefined)));
  if (missing.length > 0) {
    const names = missing.map((required) => (typeof required === 'string' ? required : required.join(' or ')));
    throw new QueryTargetError('bad_connection', `Connection content lacks required fields: ${names.join(', ')} (keys found: ${keyList(keys)})`);
  }
  return { itemType, mode, params, keys };
};

/** The accepted names of each parameter of a connection type, for documentation and tests. */
export const acceptedNames = (itemType: QueryableType, mode?: QueryMode): ReadonlyArray<ParameterNames> => {
  if (itemType === 'connection.gcp') return mode === 'gcs' ? GCP_STORAGE : GCP_WAREHOUSE;
  return tableOf(itemType, {}, []);
};

export const prefixesOf = (itemType: QueryableType): ReadonlyArray<string> => PREFIXES[itemType];
