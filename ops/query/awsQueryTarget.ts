import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { QueryRequest, QueryTarget, ResolvedConnection } from '../../shared/ports/QueryTarget.ts';
import { duckdbEndpoint } from './duckdbEndpoint.ts';
import type { CloudTargetDeps } from './cloudTargetDeps.ts';
import { ConnectionParams } from './connectionParams.ts';
import { embeddedQuery } from './embeddedQuery.ts';
import { athenaQuery } from './athenaQuery.ts';
import { sqlStringLiteral } from './objectUrlLiterals.ts';
import { redshiftDataQuery } from './redshiftDataQuery.ts';
import { s3ObjectStore } from './s3ObjectStore.ts';

type AwsCredentials = NonNullable<S3ClientConfig['credentials']>;
/** A target's credentials, resolved at its first statement (the STS provider's package loads then, not at start). */
type CredentialsOnce = () => Promise<AwsCredentials | undefined>;

/** STS sessions for a role last this long: an inspection statement runs 2 minutes at most. */
const ROLE_SESSION_SECONDS = 900;

/**
 * The credentials of an aws connection: access_key + secret_key (+ session_token); role_arn
 * assumed through STS with those keys, or with the service's default chain when there are none;
 * neither: the SDK's default chain (environment, shared files, container or instance role), unless
 * QUERY_CLOUD_AMBIENT_CREDENTIALS is off. Resolves undefined for the default chain. The fields are
 * checked now (a bad connection fails when built); the role's provider is made at the first
 * statement, once, and shared by the target's later statements.
 */
const awsCredentials = (
  params: ConnectionParams,
  region: string,
  deps: CloudTargetDeps,
): CredentialsOnce => {
  const accessKeyId = params.text('access_key');
  const secretAccessKey = params.text('secret_key');
  const sessionToken = params.text('session_token');
  const roleArn = params.text('role_arn');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) throw params.bad('needs both access_key and secret_key, or neither');
  if (sessionToken !== undefined && accessKeyId === undefined) throw params.bad('has a session_token without access_key and secret_key');
  const keys = accessKeyId !== undefined && secretAccessKey !== undefined ? { accessKeyId, secretAccessKey, ...(sessionToken === undefined ? {} : { sessionToken }) } : undefined;
  if (keys === undefined && !deps.settings.ambientCredentials) {
    throw params.bad('has no access_key and secret_key, and the service lends none of its own (QUERY_CLOUD_AMBIENT_CREDENTIALS is off)');
  }
  if (roleArn === undefined) return async () => keys;
  let provider: Promise<AwsCredentials> | undefined;
  return () =>
    (provider ??= import('@aws-sdk/credential-providers').then(({ fromTemporaryCredentials }) =>
      fromTemporaryCredentials({
        params: { RoleArn: roleArn, RoleSessionName: 'pipeline-inspection', DurationSeconds: ROLE_SESSION_SECONDS },
        ...(keys === undefined ? {} : { masterCredentials: keys }),
        clientConfig: { region, ...(deps.endpoints?.sts === undefined ? {} : { endpoint: deps.endpoints.sts }) },
      }),
    ));
};

/**
 * connection.aws (spec 4.10, cloud_a): Athena when output_location is present; the Redshift Data
 * API when cluster_identifier (provisioned) or workgroup_name (serverless) is; otherwise S3 through
 * the embedded engine. region is required in every mode, database for Redshift. Clients are built
 * per statement (connect timeout from the request) and destroyed after it.
 */
export const awsQueryTarget = (connection: ResolvedConnection, deps: CloudTargetDeps): QueryTarget => {
  const params = new ConnectionParams(connection);
  const outputLocation = params.text('output_location');
  const clusterIdentifier = params.text('cluster_identifier');
  const workgroupName = params.text('workgroup_name');
  const mode = outputLocation !== undefined ? 'Athena' : clusterIdentifier !== undefined || workgroupName !== undefined ? 'Redshift' : 'S3';
  params.require(mode, mode === 'Redshift' ? ['region', 'database'] : ['region']);
  if (mode === 'Redshift' && clusterIdentifier !== undefined && workgroupName !== undefined) {
    throw params.bad('has both cluster_identifier (provisioned) and workgroup_name (serverless): keep one');
  }
  const region = params.text('region') as string;
  const database = params.text('database');
  const workgroup = params.text('workgroup');
  const credentialsOnce = awsCredentials(params, region, deps);
  const common = (request: QueryRequest, credentials: AwsCredentials | undefined) => ({
    region,
    ...(credentials === undefined ? {} : { credentials }),
    maxAttempts: 3,
    requestHandler: { connectionTimeout: request.connectTimeoutMs },
  });

  return {
    // The SDK clients are imported at a target's first statement (as their commands are, in the
    // modules that send them): they take about a second to load, which a start that queries no AWS
    // target need not pay.
    async execute(request) {
      const credentials = await credentialsOnce();
      if (mode === 'Athena') {
        const { AthenaClient } = await import('@aws-sdk/client-athena');
        const client = new AthenaClient({ ...common(request, credentials), ...(deps.endpoints?.athena === undefined ? {} : { endpoint: deps.endpoints.athena }) });
        try {
          return await athenaQuery(client, { outputLocation: outputLocation as string, workgroup, database }, request, deps.pollFirstMs);
        } finally {
          client.destroy();
        }
      }
      if (mode === 'Redshift') {
        const { RedshiftDataClient } = await import('@aws-sdk/client-redshift-data');
        const client = new RedshiftDataClient({ ...common(request, credentials), ...(deps.endpoints?.redshiftData === undefined ? {} : { endpoint: deps.endpoints.redshiftData }) });
        const place = clusterIdentifier !== undefined ? { database: database as string, clusterIdentifier } : { database: database as string, workgroupName: workgroupName as string };
        try {
          return await redshiftDataQuery(client, place, request, deps.pollFirstMs);
        } finally {
          client.destroy();
        }
      }
      const endpoint = deps.endpoints?.s3;
      const { S3Client } = await import('@aws-sdk/client-s3');
      const client = new S3Client({
        ...common(request, credentials),
        // A bucket in another region answers with a redirect the client follows.
        followRegionRedirects: true,
        // Reading only: no checksum headers the S3-compatible stores may not know.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        ...(endpoint === undefined ? {} : { endpoint, forcePathStyle: true }),
      });
      const store = s3ObjectStore({
        client,
        label: 'S3',
        schemes: ['s3'],
        async duckdbSecret() {
          const identity = await client.config.credentials();
          const fields = [
            'TYPE s3',
            `KEY_ID ${sqlStringLiteral(identity.accessKeyId)}`,
            `SECRET ${sqlStringLiteral(identity.secretAccessKey)}`,
            ...(identity.sessionToken === undefined ? [] : [`SESSION_TOKEN ${sqlStringLiteral(identity.sessionToken)}`]),
            `REGION ${sqlStringLiteral(region)}`,
            ...(endpoint === undefined ? [] : duckdbEndpoint(endpoint)),
          ];
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
