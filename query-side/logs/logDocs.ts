import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { LOG_CATEGORIES } from '../../shared/ports/Logger.ts';
import { contentSchema, fileSchema } from './logsQuery.ts';

/** A client past its share of streams, and a server with none left (StreamShares): before any stream starts. */
const refusals = {
  429: detail('Too many open log streams (this client holds its share: LOG_STREAMS_PER_USER signed in, LOG_STREAMS_PER_ADDRESS anonymous); Retry-After'),
  503: detail('No log streams free on the server; try again later (LOG_STREAMS_MAX, or LOG_STREAMS_ANONYMOUS_MAX for anonymous clients); Retry-After'),
};

const sse = (events: string) => ({ description: `Server-Sent Events: ${events}. Failures after the start are an \`error\` event ({message}), never a status.`, contentType: 'text/event-stream', schema: { type: 'string' } });

/** Wildcard paths: relative to the logs root, slashes allowed; checked against it (a path outside is "not found"). */
const folderPath = { type: 'object', properties: { folder_path: { type: 'string', description: 'A folder below the logs root; may contain slashes' } }, required: ['folder_path'] };
const filePath = { type: 'object', properties: { file_path: { type: 'string', description: 'A file below the logs root; may contain slashes' } }, required: ['file_path'] };
const sessionPath = { type: 'object', properties: { session_id: { type: 'string' } }, required: ['session_id'] };

/** POST /logs/query's body as logQueryRequest checks it (by hand: every failure is a 200 `{error}`). */
const logQuerySchema = {
  type: 'object',
  properties: {
    sql: { type: 'string', description: 'One SELECT (or WITH) over the view `logs`; no semicolons' },
    category: { type: 'string', enum: [...LOG_CATEGORIES] },
    date: { type: 'string', description: 'YYYY-MM-DD: that day only; absent: every day of the category' },
  },
  required: ['sql', 'category'],
};

const logQueryAnswer = {
  oneOf: [
    objectOf({ columns: { type: 'array', items: { type: 'string' } }, rows: { type: 'array', items: { type: 'array' } }, row_count: { type: 'integer' }, truncated: { type: 'boolean' } }),
    objectOf({ error: { type: 'string' } }),
  ],
};

/** The OpenAPI docs of logRoutes and logsQueryRoutes (spec 4.9, section 6). */
export const logDocs: RouteDocs = {
  tag: 'Logs',
  description:
    'Log files and run sessions: Server-Sent Event streams, paged JSON and SQL over the log files. Public unless PUBLIC_ROUTES_REQUIRE_AUTH=true, which asks for a Bearer token or the frontend_token cookie (401 without).',
  auth: 'public',
  guarded: true,
  schemas: { LogQuery: logQuerySchema },
  routes: [
    {
      method: 'GET',
      path: '/api/v1/logs/listItems{/*folder_path}',
      summary: 'List a log folder (the logs root without a path)',
      params: { path: folderPath },
      responses: { 200: sse('status, data ({directory, items: [{name, type, size, modified, path}], total_count}), done'), ...refusals, 422: null },
    },
    {
      method: 'GET',
      path: '/api/v1/logs/file{/*file_path}',
      summary: 'Stream a log file',
      description: 'Normal mode: text chunks. reverse=true: one line per chunk, newest first, skip and limit applied (page through a big file).',
      params: { path: filePath, query: fileSchema },
      responses: { 200: sse('status, metadata ({name, path, size, modified}), chunk ({content}) many, done ({state, total_chunks})'), ...refusals },
    },
    {
      method: 'GET',
      path: '/api/v1/logs/session/:session_id',
      summary: "Stream a run session's log entries, following it while it runs",
      params: { path: sessionPath },
      responses: { 200: sse('status, log (an entry) many, done ({state, total_count})'), ...refusals, 422: null },
    },
    {
      method: 'GET',
      path: '/api/v1/logs/session/:session_id/content',
      summary: "A page of a session's log entries",
      description: 'level and category compare without regard to case. A session with no file is an empty page.',
      params: { path: sessionPath, query: contentSchema },
      responses: {
        200: json(
          'The page',
          objectOf({
            items: { type: 'array', items: { type: 'object', description: 'A log entry: timestamp, level, message, category, session_id and more' } },
            pagination: objectOf({ current_page: { type: 'integer' }, per_page: { type: 'integer' }, has_next: { type: 'boolean' } }),
          }),
        ),
      },
    },
    {
      method: 'POST',
      path: '/api/v1/logs/query',
      summary: 'SQL over the log files of a category',
      description: 'Every failure (missing category, bad SQL, no files yet, a refused body) is HTTP 200 {error}. Scans stop after 30 seconds.',
      body: { schema: logQuerySchema },
      responses: { 200: json('Rows, or {error}', logQueryAnswer), 413: null, 422: null },
    },
  ],
};
