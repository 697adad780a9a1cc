import type { ItemTypeDefinition } from '../types.ts';
import { defineType, int, obj, SIBLING_UNIQUE, type JsonSchema } from './common.ts';

/**
 * Connections: free-form credentials in `content` (field synonyms are resolved by the query endpoint,
 * spec 4.10), the queue's max_parallelism and sort_dict. The five kinds the service can query have
 * their own canonical types; other `connection.<kind>` subtypes resolve to the generic definition.
 */

export const SORT_DIRECTIONS = ['ascending', 'descending', 'asc', 'desc', 1, -1] as const;

const properties = (): Record<string, JsonSchema> => ({
  content: obj(),
  max_parallelism: int(0),
  sort_dict: { type: 'object', additionalProperties: { enum: [...SORT_DIRECTIONS] } },
});

const connection = (type: string, description: string): ItemTypeDefinition =>
  defineType({
    type,
    base: 'connection',
    description,
    properties: properties(),
    uniqueFields: SIBLING_UNIQUE,
    versionedFields: ['content', 'max_parallelism', 'sort_dict'],
    // One task at a time until the owner raises it: an absent cap must not flood the target system.
    defaults: { max_parallelism: 1 },
  });

export const connectionTypes: ItemTypeDefinition[] = [
  connection('connection', 'Generic connection; also the definition behind any connection.<kind> not listed here.'),
  connection('connection.postgresql', 'PostgreSQL connection (relational): host, port, database, user, password.'),
  connection('connection.mysql', 'MySQL / MariaDB connection (relational): as PostgreSQL plus charset.'),
  connection('connection.aws', 'AWS connection: Athena, Redshift (provisioned or serverless) or S3 through the embedded engine.'),
  connection('connection.gcp', 'Google Cloud connection: BigQuery (project set) or GCS with HMAC keys.'),
  connection('connection.azure', 'Azure connection: Blob storage through the embedded engine.'),
];

/** Alternative spellings accepted in item_type; they are stored as the canonical type. */
export const CONNECTION_ALIASES: Readonly<Record<string, string>> = {
  'connection.postgres': 'connection.postgresql',
  'connection.pg': 'connection.postgresql',
  'connection.mariadb': 'connection.mysql',
  'connection.s3': 'connection.aws',
  'connection.athena': 'connection.aws',
  'connection.redshift': 'connection.aws',
  'connection.bigquery': 'connection.gcp',
  'connection.gcs': 'connection.gcp',
  'connection.blob': 'connection.azure',
  'connection.azure_blob': 'connection.azure',
};
