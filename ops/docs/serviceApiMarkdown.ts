import { fileURLToPath } from 'node:url';
import { API_ROUTE_DOCS, apiInfo } from '../http/apiRouteDocs.ts';
import { openApiDocument } from '../http/openApiDocument.ts';
import { apiMarkdown } from './apiMarkdown.ts';

/** Where the reference is committed. */
export const API_MARKDOWN_FILE = fileURLToPath(new URL('../../docs/api.md', import.meta.url));

/** docs/api.md as it should read: from the very document GET /api/v1/openapi.json serves. */
export const serviceApiMarkdown = (): string => apiMarkdown(openApiDocument(API_ROUTE_DOCS, apiInfo()));
