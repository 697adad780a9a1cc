import { serviceVersion } from '../serviceVersion.ts';
import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { actionDocs } from '../../command-side/action/actionDocs.ts';
import { agentDocs } from '../../command-side/ai/agent/agentDocs.ts';
import { generateDocs } from '../../command-side/ai/generateDocs.ts';
import { authDocs } from '../../command-side/auth/authDocs.ts';
import { catalogCommandDocs } from '../../command-side/catalog/catalogCommandDocs.ts';
import { cronDocs } from '../../command-side/cron/cronDocs.ts';
import { backfillDocs } from '../../command-side/backfill/backfillDocs.ts';
import { groupCommandDocs } from '../../command-side/group/groupCommandDocs.ts';
import { marketplaceDocs } from '../../command-side/marketplace/marketplaceDocs.ts';
import { taskDocs } from '../../command-side/task/taskDocs.ts';
import { userCommandDocs } from '../../command-side/user/userCommandDocs.ts';
import { catalogQueryDocs } from '../../query-side/catalog/catalogQueryDocs.ts';
import { eventDocs } from '../../query-side/events/eventDocs.ts';
import { groupQueryDocs } from '../../query-side/group/groupQueryDocs.ts';
import { logDocs } from '../../query-side/logs/logDocs.ts';
import { queryDocs } from '../../query-side/query/queryDocs.ts';
import { taskQueryDocs } from '../../query-side/task/taskQueryDocs.ts';
import { userQueryDocs } from '../../query-side/user/userQueryDocs.ts';
import { mcpDocs } from '../mcp/mcpDocs.ts';
import { metricsDocs } from '../metrics/metricsDocs.ts';
import { API_DOCS_PATH, DOCS_ASSETS, OPENAPI_JSON_PATH } from './apiReferenceAssets.ts';
import type { ApiInfo } from './openApiDocument.ts';
import { ROLES } from '../config.ts';

/** The process's role (npm start -- --role). */
const ROLE = { type: 'string', enum: [...ROLES], description: 'What this process runs (npm start -- --role)' };

const notBuilt = detail('The web console is not built: run `npm run console:build` (npm start builds it)');

/** What createApp answers itself (/healthz) and the API reference (apiReferenceRoutes.ts). */
const serviceDocs: RouteDocs = {
  tag: 'Service',
  description: 'Health and this reference.',
  auth: 'public',
  routes: [
    {
      method: 'GET',
      path: '/healthz',
      summary: 'Whether the service serves',
      description: 'Every other route answers 503 {detail: "Service is starting"} until the read models are rebuilt.',
      responses: {
        200: json('Serving', objectOf({ status: { type: 'string', const: 'ok' }, role: ROLE })),
        503: json('Starting: the read models are being rebuilt', objectOf({ status: { type: 'string', const: 'starting' }, role: ROLE })),
      },
    },
    {
      method: 'GET',
      path: '/',
      summary: 'The web console (HTML)',
      description: 'The console is a client of this API (ops/console); its page, and the same page for its client routes below /console.',
      responses: { 200: { description: 'The console page', contentType: 'text/html', schema: { type: 'string' } }, 422: null, 503: notBuilt },
    },
    {
      method: 'GET',
      path: '/console{/*path}',
      summary: "The web console's client routes and hashed assets",
      description: 'An asset under /console/assets/ (cached for a year), or the console page for a client route.',
      params: { path: { type: 'object', properties: { path: { type: 'string', description: 'Below /console; may contain slashes' } }, required: ['path'] } },
      responses: {
        200: { description: 'The asset or the console page', contentType: '*/*', schema: { type: 'string' } },
        404: detail('No such asset'),
        422: null,
        503: notBuilt,
      },
    },
    {
      method: 'GET',
      path: OPENAPI_JSON_PATH,
      summary: 'This document (OpenAPI 3.1)',
      responses: { 200: json('The document', { type: 'object' }, { ETag: 'Changes with the document' }) },
    },
    {
      method: 'GET',
      path: API_DOCS_PATH,
      summary: 'The browsable API reference (HTML)',
      responses: { 200: { description: 'The viewer page', contentType: 'text/html', schema: { type: 'string' } } },
    },
    {
      method: 'GET',
      path: `${API_DOCS_PATH}/:asset`,
      summary: "The viewer's scripts, styles and icons",
      description: 'With ?v=<the version the page names>, cached for a year; otherwise revalidated.',
      params: {
        path: { type: 'object', properties: { asset: { type: 'string', enum: Object.keys(DOCS_ASSETS) } }, required: ['asset'] },
        query: { type: 'object', properties: { v: { type: 'string' } } },
      },
      responses: { 200: { description: 'The file', contentType: '*/*', schema: { type: 'string' } }, 404: detail('No such asset'), 422: null },
    },
  ],
};

/**
 * Every route's docs, in the order the reference shows them. A router added to ops/service.ts needs
 * its docs here: the document's test fails until every registered route is documented.
 */
export const API_ROUTE_DOCS: ReadonlyArray<RouteDocs> = [
  authDocs,
  catalogCommandDocs,
  catalogQueryDocs,
  taskDocs,
  taskQueryDocs,
  backfillDocs,
  actionDocs,
  cronDocs,
  groupCommandDocs,
  groupQueryDocs,
  userCommandDocs,
  userQueryDocs,
  marketplaceDocs,
  logDocs,
  queryDocs,
  generateDocs,
  agentDocs,
  eventDocs,
  mcpDocs,
  metricsDocs,
  serviceDocs,
];

/** The document's info: the package's version. */
export const apiInfo = (): ApiInfo => ({
  title: 'Pipeline orchestration service',
  version: serviceVersion(),
  description: [
    'Every route of the service, with the request schemas the routes validate with.',
    '',
    'Authentication: the login flow (Auth) ends with POST /api/v1/token, which sets the `frontend_token` cookie; send that access token as `Authorization: Bearer <token>` (GET /api/v1/get-mcp-token hands it out). Routes marked without security need none.',
    '',
    'Errors are `{"detail": ...}`: a string, an object, or for 422 the list of entries `{type, loc, msg, input}`. Until the read models are rebuilt at start, every route but /healthz answers 503 `{"detail": "Service is starting"}`.',
  ].join('\n'),
});
