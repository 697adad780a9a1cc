import { QueryTargetError } from '../../shared/ports/QueryTarget.ts';
import { shortMessage } from './queryRun.ts';

/** Error names AWS (and S3-compatible stores) use for credentials that are wrong, expired or not allowed. */
const CREDENTIAL_ERRORS = new Set([
  'AccessDenied',
  'AccessDeniedException',
  'AuthFailure',
  'CredentialsProviderError',
  'ExpiredToken',
  'ExpiredTokenException',
  'IncompleteSignature',
  'InvalidAccessKeyId',
  'InvalidClientTokenId',
  'InvalidSignatureException',
  'InvalidToken',
  'MissingAuthenticationToken',
  'SignatureDoesNotMatch',
  'UnrecognizedClientException',
  'RegionDisabledException',
]);

/** Node's socket and DNS failures: the host cannot be reached. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ECONNABORTED']);

interface AwsLikeError {
  name?: string;
  message?: string;
  code?: string;
  cause?: unknown;
  $metadata?: { httpStatusCode?: number };
  $retryable?: unknown;
}

const networkCode = (error: unknown, depth = 0): string | null => {
  if (typeof error !== 'object' || error === null || depth > 3) return null;
  const { code, cause } = error as AwsLikeError;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
  return networkCode(cause, depth + 1);
};

/**
 * An SDK error as the port's failure kinds: credentials refused or missing, the host unreachable,
 * a connect or socket timeout, throttling and the service's own 5xx are `unreachable` (502: the
 * target cannot serve the statement now); any other answer from the service is about the statement
 * or the objects it names (`sql`, 400, with the service's message).
 */
export const awsFailure = (error: unknown, service: string): QueryTargetError => {
  if (error instanceof QueryTargetError) return error;
  const { name = 'Error', message = String(error), $metadata } = (typeof error === 'object' && error !== null ? error : {}) as AwsLikeError;
  const status = $metadata?.httpStatusCode;
  const code = networkCode(error);
  if (code !== null) return new QueryTargetError('unreachable', `${service} is unreachable (${code})`);
  if (name === 'CredentialsProviderError') return new QueryTargetError('unreachable', `No AWS credentials for ${service}: ${shortMessage(message)}`);
  if (CREDENTIAL_ERRORS.has(name) || status === 401 || status === 403) {
    return new QueryTargetError('unreachable', `${service} refused the credentials: ${name}: ${shortMessage(message)}`);
  }
  if (name === 'TimeoutError' || name === 'RequestTimeout' || name === 'RequestTimeoutException') {
    return new QueryTargetError('unreachable', `${service} did not answer in time: ${shortMessage(message)}`);
  }
  if (/Throttl|TooManyRequests|SlowDown|ServiceUnavailable|InternalServer|InternalFailure/.test(name) || (status !== undefined && status >= 500)) {
    return new QueryTargetError('unreachable', `${service} cannot serve the statement now: ${name}: ${shortMessage(message)}`);
  }
  if (status === undefined) {
    // No HTTP answer from the service at all (a socket failure without a code we know).
    return new QueryTargetError('unreachable', `${service} could not be reached: ${shortMessage(message)}`);
  }
  return new QueryTargetError('sql', `${service}: ${shortMessage(message)}`);
};
