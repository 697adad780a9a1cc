import { randomUUID } from 'node:crypto';
import { QueryTargetError, type QueryRequest, type QueryResult } from '../../shared/ports/QueryTarget.ts';
import { AnswerBudget } from '../../shared/query/answerBudget.ts';
import { booleanValue, floatValue, integerValue, timestampFromMicros } from './cloudValues.ts';
import { CANCEL_TIMEOUT_MS, QueryRun, shortMessage } from './queryRun.ts';

export interface BigQueryStatement {
  /** The project the job runs (and is billed) in. */
  project: string;
  /** Default dataset for unqualified table names: `dataset` or `project.dataset`. */
  dataset?: string | undefined;
  location?: string | undefined;
}

export interface BigQueryAccess {
  /** https://bigquery.googleapis.com, or a stub's address in the tests. */
  endpoint: string;
  /** The Authorization header (and any other) for a request to `url`. */
  headers(url: string): Promise<Headers>;
}

interface TableFieldSchema {
  name?: string;
  type?: string;
  mode?: string;
  fields?: TableFieldSchema[];
}

interface Cell {
  v?: unknown;
}

interface QueryAnswer {
  schema?: { fields?: TableFieldSchema[] };
  jobReference?: { projectId?: string; jobId?: string; location?: string };
  jobComplete?: boolean;
  pageToken?: string;
  rows?: Array<{ f?: Cell[] }>;
}

interface ErrorAnswer {
  error?: { code?: number; message?: string; status?: string; errors?: Array<{ reason?: string; message?: string }> };
}

/** A cell by its field's type: REST answers give scalars as text, records as {f: [...]}, repeated fields as [{v}]. */
const cellValue = (value: unknown, field: TableFieldSchema): unknown => {
  if (value === null || value === undefined) return null;
  if (field.mode === 'REPEATED') {
    return Array.isArray(value) ? value.map((item: Cell) => cellValue(item?.v, { ...field, mode: 'NULLABLE' })) : value;
  }
  const type = (field.type ?? 'STRING').toUpperCase();
  if (type === 'RECORD' || type === 'STRUCT') {
    const cells = (value as { f?: Cell[] }).f ?? [];
    return Object.fromEntries((field.fields ?? []).map((inner, index) => [inner.name ?? String(index), cellValue(cells[index]?.v, inner)]));
  }
  if (typeof value !== 'string') return value;
  switch (type) {
    case 'INTEGER':
    case 'INT64':
      return integerValue(value);
    case 'FLOAT':
    case 'FLOAT64':
      return floatValue(value);
    case 'BOOLEAN':
    case 'BOOL':
      return booleanValue(value);
    case 'TIMESTAMP':
      // Asked as int64 microseconds (formatOptions.useInt64Timestamp): exact, unlike the float seconds default.
      return timestampFromMicros(value);
    // NUMERIC and BIGNUMERIC (38 and 76 digits) stay text, as wide decimals do elsewhere; BYTES are
    // already base64; DATE, TIME, DATETIME, JSON, GEOGRAPHY, INTERVAL stay as BigQuery writes them.
    default:
      return value;
  }
};

/**
 * BigQuery's error answers as failure kinds: 401 and 403 (credentials, permissions, billing,
 * quota) and 5xx are `unreachable`; 400 and 404 (syntax, unknown table or dataset) are `sql` with
 * BigQuery's message.
 */
const failure = (status: number, body: ErrorAnswer | null): QueryTargetError => {
  const message = shortMessage(body?.error?.message ?? `HTTP ${status}`);
  if (status === 401 || status === 403) return new QueryTargetError('unreachable', `BigQuery refused the credentials or access: ${message}`);
  if (status >= 500 || status === 429) return new QueryTargetError('unreachable', `BigQuery cannot serve the statement now: ${message}`);
  return new QueryTargetError('sql', `BigQuery: ${message}`);
};

/**
 * One statement on BigQuery through its REST API: jobs.query (standard SQL, default dataset,
 * location, at most maxRows + 1 rows asked), jobs.getQueryResults long-polled until the job is
 * complete and then paged with pageToken until maxRows + 1 rows. Past the statement timeout (or when
 * the client leaves) the job is cancelled with jobs.cancel.
 */
export const bigQueryQuery = async (access: BigQueryAccess, statement: BigQueryStatement, request: QueryRequest): Promise<QueryResult> => {
  const run = new QueryRun(request);
  const base = `${access.endpoint.replace(/\/+$/, '')}/bigquery/v2/projects/${encodeURIComponent(statement.project)}`;
  let job: { projectId: string; jobId: string; location?: string | undefined } | undefined;

  const call = async (url: string, init: { method: 'GET' | 'POST'; body?: unknown }, signal: AbortSignal): Promise<QueryAnswer> => {
    let headers: Headers;
    try {
      headers = await access.headers(url);
    } catch (error) {
      if (run.stopped || signal.aborted) throw error;
      throw new QueryTargetError('unreachable', `The Google credentials could not be used: ${shortMessage(error instanceof Error ? error.message : String(error))}`);
    }
    headers.set('accept', 'application/json');
    if (init.body !== undefined) headers.set('content-type', 'application/json');
    let response: Response;
    try {
      response = await fetch(url, { method: init.method, headers, body: init.body === undefined ? null : JSON.stringify(init.body), signal });
    } catch (error) {
      if (run.stopped || signal.aborted) throw error;
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new QueryTargetError('unreachable', `BigQuery is unreachable${cause ? ` (${cause})` : ''}`);
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      body = null;
    }
    if (!response.ok) throw failure(response.status, body as ErrorAnswer | null);
    if (body === null || typeof body !== 'object') throw new QueryTargetError('unreachable', `BigQuery answered HTTP ${response.status} without a JSON body`);
    return body as QueryAnswer;
  };

  const resultsUrl = (pageToken: string | undefined, maxResults: number, waitMs: number): string => {
    if (job === undefined) throw new QueryTargetError('unreachable', 'BigQuery answered without a job reference');
    const query = new URLSearchParams({ maxResults: String(maxResults), timeoutMs: String(waitMs), 'formatOptions.useInt64Timestamp': 'true' });
    if (job.location !== undefined) query.set('location', job.location);
    if (pageToken !== undefined) query.set('pageToken', pageToken);
    return `${access.endpoint.replace(/\/+$/, '')}/bigquery/v2/projects/${encodeURIComponent(job.projectId)}/queries/${encodeURIComponent(job.jobId)}?${query}`;
  };

  try {
    const [datasetProject, datasetId] = statement.dataset?.includes('.') ? statement.dataset.split('.', 2) : [statement.project, statement.dataset];
    let answer = await run.firstContact(request.connectTimeoutMs, 'BigQuery', (signal) =>
      call(
        `${base}/queries`,
        {
          method: 'POST',
          body: {
            query: request.sql,
            useLegacySql: false,
            maxResults: request.maxRows + 1,
            // How long this call waits for the job before answering jobComplete: false (then
            // polled): well within the connect timeout that bounds this first call.
            timeoutMs: Math.max(1, Math.min(5000, Math.floor(request.connectTimeoutMs / 2))),
            requestId: randomUUID(),
            formatOptions: { useInt64Timestamp: true },
            ...(datasetId === undefined ? {} : { defaultDataset: { projectId: datasetProject, datasetId } }),
            ...(statement.location === undefined ? {} : { location: statement.location }),
          },
        },
        signal,
      ),
    );
    if (answer.jobReference?.jobId !== undefined) {
      job = { projectId: answer.jobReference.projectId ?? statement.project, jobId: answer.jobReference.jobId, location: answer.jobReference.location ?? statement.location };
    }
    while (answer.jobComplete !== true) {
      const waitMs = Math.max(1, Math.min(10_000, run.remainingMs()));
      answer = await run.step((signal) => call(resultsUrl(undefined, request.maxRows + 1, waitMs), { method: 'GET' }, signal));
    }

    const fields = answer.schema?.fields ?? [];
    const columns = fields.map((field) => field.name ?? '');
    const budget = new AnswerBudget(request, columns);
    for (;;) {
      for (const row of answer.rows ?? []) {
        if (!budget.offer(fields.map((field, index) => cellValue(row.f?.[index]?.v, field)))) break;
      }
      const pageToken = answer.pageToken;
      if (pageToken === undefined || budget.truncated || job === undefined) break;
      const wanted = request.maxRows + 1 - budget.rows.length;
      answer = await run.step((signal) => call(resultsUrl(pageToken, wanted, 10_000), { method: 'GET' }, signal));
    }
    return budget.answer(columns);
  } catch (error) {
    if (run.stopped) {
      if (job !== undefined) {
        const query = job.location === undefined ? '' : `?location=${encodeURIComponent(job.location)}`;
        const url = `${access.endpoint.replace(/\/+$/, '')}/bigquery/v2/projects/${encodeURIComponent(job.projectId)}/jobs/${encodeURIComponent(job.jobId)}/cancel${query}`;
        await call(url, { method: 'POST' }, AbortSignal.timeout(CANCEL_TIMEOUT_MS)).catch(() => undefined);
      }
      throw run.stoppedError();
    }
    if (error instanceof QueryTargetError) throw error;
    throw new QueryTargetError('unreachable', `BigQuery could not be reached: ${shortMessage(error instanceof Error ? error.message : String(error))}`);
  } finally {
    run.dispose();
  }
};
