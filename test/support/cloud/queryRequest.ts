import { expect } from 'chai';
import { QueryTargetError, type QueryFailureKind, type QueryRequest } from '../../../shared/ports/QueryTarget.ts';

/** A request as the route makes it, with the spec's limits unless a test shortens them. */
export const queryRequest = (sql: string, overrides: Partial<QueryRequest> = {}): QueryRequest => ({
  sql,
  maxRows: 10_000,
  maxBytes: 32 * 1024 * 1024,
  statementTimeoutMs: 30_000,
  connectTimeoutMs: 5_000,
  signal: new AbortController().signal,
  ...overrides,
});

/** The QueryTargetError `work` fails with, checked for its kind. */
export const failure = async (work: () => Promise<unknown> | unknown, kind: QueryFailureKind): Promise<QueryTargetError> => {
  let caught: unknown = null;
  try {
    await work();
  } catch (error) {
    caught = error;
  }
  expect(caught, 'expected a QueryTargetError').to.be.instanceOf(QueryTargetError);
  const error = caught as QueryTargetError;
  expect(error.kind, error.message).to.equal(kind);
  return error;
};
