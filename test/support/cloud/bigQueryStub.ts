import { generateKeyPairSync } from 'node:crypto';
import { importSPKI, jwtVerify, type JWTPayload } from 'jose';
import { loopbackServer, type LoopbackServer, type RecordedRequest } from './loopbackServer.ts';

/** A service-account key as Google issues it (its own RSA key, generated for the test). */
export const serviceAccount = (): { json: Record<string, string>; publicKeyPem: string } => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return {
    publicKeyPem: publicKey,
    json: {
      type: 'service_account',
      project_id: 'acme-analytics',
      private_key_id: 'key-1',
      private_key: privateKey,
      client_email: 'inspector@acme-analytics.iam.gserviceaccount.com',
      client_id: '1234567890',
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: 'https://oauth2.googleapis.com/token',
    },
  };
};

export interface BigQueryCall {
  method: string;
  path: string;
  query: URLSearchParams;
  body: Record<string, unknown> | null;
  /** The bearer JWT's claims, verified with the service account's public key (null when absent or invalid). */
  claims: JWTPayload | null;
}

export type BigQueryAnswer = { status?: number; body: unknown };

/**
 * A loopback stub of BigQuery's REST API (jobs.query, jobs.getQueryResults, jobs.cancel) that
 * verifies each request's self-signed JWT against `publicKeyPem` and answers with `handle`.
 */
export const bigQueryStub = async (
  publicKeyPem: string,
  handle: (call: BigQueryCall) => BigQueryAnswer | Promise<BigQueryAnswer>,
): Promise<LoopbackServer & { calls: BigQueryCall[] }> => {
  const key = await importSPKI(publicKeyPem, 'RS256');
  const calls: BigQueryCall[] = [];
  const server = await loopbackServer(async (request: RecordedRequest, response) => {
    const url = new URL(request.url, 'http://stub');
    const token = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''))?.[1];
    const claims = token === undefined ? null : await jwtVerify(token, key).then((verified) => verified.payload, () => null);
    const call: BigQueryCall = { method: request.method, path: url.pathname, query: url.searchParams, body: request.body === '' ? null : (JSON.parse(request.body) as Record<string, unknown>), claims };
    calls.push(call);
    const answer = claims === null ? { status: 401, body: { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } } } : await handle(call);
    response.statusCode = answer.status ?? 200;
    response.setHeader('content-type', 'application/json; charset=UTF-8');
    response.end(JSON.stringify(answer.body));
  });
  return { ...server, calls };
};
