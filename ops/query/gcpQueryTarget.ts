import type { AuthClient } from 'google-auth-library';
import type { QueryTarget, ResolvedConnection } from '../../shared/ports/QueryTarget.ts';
import { duckdbEndpoint } from './duckdbEndpoint.ts';
import { bigQueryQuery } from './bigQueryQuery.ts';
import type { CloudTargetDeps } from './cloudTargetDeps.ts';
import { ConnectionParams } from './connectionParams.ts';
import { embeddedQuery } from './embeddedQuery.ts';
import { sqlStringLiteral } from './objectUrlLiterals.ts';
import { s3ObjectStore } from './s3ObjectStore.ts';

const BIGQUERY_SCOPE = 'https://www.googleapis.com/auth/bigquery';
const BIGQUERY_ENDPOINT = 'https://bigquery.googleapis.com';
const GCS_ENDPOINT = 'https://storage.googleapis.com';

/** The credentials field: a service-account (or other Google credential) JSON, as text or as an object. */
const credentialsJson = (params: ConnectionParams): Record<string, unknown> | undefined => {
  const raw = params.raw('credentials');
  if (raw === undefined) return undefined;
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw params.bad('has credentials that are not valid JSON');
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw params.bad('has credentials that are not a JSON object');
  const json = value as Record<string, unknown>;
  if (json.type === 'service_account' && (typeof json.client_email !== 'string' || typeof json.private_key !== 'string')) {
    throw params.bad('has service-account credentials without client_email or private_key');
  }
  return json;
};

/**
 * The auth client. A service account signs its own JWT with the BigQuery scope for every request
 * (Google's self-signed JWT, AIP-4111): no token exchange with the OAuth endpoint, so nothing but
 * BigQuery is contacted. Other credential types (authorized_user, external_account, ...) and
 * application default credentials go through google-auth-library as usual.
 */
const authClient = async (credentials: Record<string, unknown> | undefined): Promise<AuthClient> => {
  // Imported at the first BigQuery statement, not at start (the library is slow to load).
  const { GoogleAuth, JWT } = await import('google-auth-library');
  if (credentials?.type === 'service_account') {
    const jwt = new JWT({
      email: credentials.client_email as string,
      key: credentials.private_key as string,
      ...(typeof credentials.private_key_id === 'string' ? { keyId: credentials.private_key_id } : {}),
      scopes: [BIGQUERY_SCOPE],
    });
    jwt.useJWTAccessWithScope = true;
    return jwt;
  }
  const client = await new GoogleAuth({ scopes: [BIGQUERY_SCOPE], ...(credentials === undefined ? {} : { credentials }) }).getClient();
  if (client instanceof JWT) client.useJWTAccessWithScope = true;
  return client;
};

/**
 * connection.gcp (spec 4.10, cloud_b): BigQuery when project is present (credentials optional:
 * application default credentials without; dataset and location optional); otherwise Google Cloud
 * Storage through the embedded engine with HMAC keys (access_key, secret_key) over GCS's
 * S3-compatible API at `endpoint` (default https://storage.googleapis.com), URLs gs:// or gcs://.
 */
export const gcpQueryTarget = (connection: ResolvedConnection, deps: CloudTargetDeps): QueryTarget => {
  const params = new ConnectionParams(connection);
  const project = params.text('project');
  if (project !== undefined) {
    const credentials = credentialsJson(params);
    if (credentials === undefined && !deps.settings.ambientCredentials) {
      throw params.bad('has no credentials, and the service lends none of its own (QUERY_CLOUD_AMBIENT_CREDENTIALS is off)');
    }
    const statement = { project, dataset: params.text('dataset'), location: params.text('location') };
    const endpoint = deps.endpoints?.bigquery ?? BIGQUERY_ENDPOINT;
    return {
      async execute(request) {
        let client: Promise<AuthClient> | null = null;
        return bigQueryQuery(
          {
            endpoint,
            async headers(url) {
              client ??= authClient(credentials);
              return (await client).getRequestHeaders(url);
            },
          },
          statement,
          request,
        );
      },
    };
  }

  params.require('Cloud Storage', ['access_key', 'secret_key']);
  const accessKeyId = params.text('access_key') as string;
  const secretAccessKey = params.text('secret_key') as string;
  const endpoint = params.text('endpoint') ?? GCS_ENDPOINT;
  try {
    if (!/^https?:$/.test(new URL(endpoint).protocol)) throw new Error('scheme');
  } catch {
    throw params.bad('has an endpoint that is not an http(s) URL');
  }
  return {
    async execute(request) {
      // Imported at the first statement, not at start (the S3 SDK is slow to load).
      const { S3Client } = await import('@aws-sdk/client-s3');
      const client = new S3Client({
        region: 'auto',
        endpoint,
        forcePathStyle: true,
        credentials: { accessKeyId, secretAccessKey },
        maxAttempts: 3,
        requestHandler: { connectionTimeout: request.connectTimeoutMs },
        // GCS's XML API does not know the newer S3 checksum headers.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
      const store = s3ObjectStore({
        client,
        label: 'Google Cloud Storage',
        schemes: ['gs', 'gcs'],
        async duckdbSecret() {
          const fields = ['TYPE gcs', `KEY_ID ${sqlStringLiteral(accessKeyId)}`, `SECRET ${sqlStringLiteral(secretAccessKey)}`, ...(endpoint === GCS_ENDPOINT ? [] : duckdbEndpoint(endpoint))];
          return `CREATE SECRET query_store (${fields.join(', ')})`;
        },
      });
      try {
        return await embeddedQuery(store, request, deps.settings, deps.slots);
      } finally {
        client.destroy();
      }
    },
  };
};
