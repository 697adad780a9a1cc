import { bounded } from './validation/boundedDetail.ts';

/**
 * Typed errors that the HTTP facade renders as `{detail}` bodies with the spec's status codes.
 * Domain code throws these; it never builds HTTP responses itself.
 */
export type ErrorDetail = string | Record<string, unknown> | ReadonlyArray<Record<string, unknown>> | null;

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly detail: ErrorDetail,
    message?: string,
  ) {
    // The message quotes the detail bounded: a 422 detail echoes its input, which may be big.
    super(message ?? (typeof detail === 'string' ? detail : JSON.stringify(bounded(detail))));
    this.name = 'AppError';
  }
}

/** A refusal to try again later (429, 503) with a Retry-After header (whole seconds): the error middleware sets it. */
export class RetryLaterError extends AppError {
  constructor(
    status: 429 | 503,
    readonly retryAfterSeconds: number,
    detail: string,
  ) {
    super(status, detail);
    this.name = 'RetryLaterError';
  }
}

/** 429 with a Retry-After header: the client's own rate or share is used up. */
export class TooManyRequestsError extends RetryLaterError {
  constructor(retryAfterSeconds: number, detail: string) {
    super(429, retryAfterSeconds, detail);
    this.name = 'TooManyRequestsError';
  }
}

/** One entry of a 422 list body, in the shape clients already parse. */
export interface ValidationEntry {
  type: string;
  loc: ReadonlyArray<string | number>;
  msg: string;
  input?: unknown;
  [extra: string]: unknown;
}

export const badRequest = (detail: ErrorDetail) => new AppError(400, detail);
export const unauthorized = (detail: ErrorDetail = 'User not authenticated') => new AppError(401, detail);
export const forbidden = (detail: ErrorDetail = 'Access denied') => new AppError(403, detail);
export const notFound = (detail: ErrorDetail = 'Item not found') => new AppError(404, detail);
export const conflict = (detail: ErrorDetail) => new AppError(409, detail);
export const unprocessable = (detail: ErrorDetail) => new AppError(422, detail);
export const writeConflict = () => new AppError(503, 'write_conflict');

export const missingField = (loc: ReadonlyArray<string | number>, input: unknown = null): ValidationEntry => ({
  type: 'missing',
  loc,
  msg: 'Field required',
  input,
});
