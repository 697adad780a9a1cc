import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the API reference is served (apiReferenceRoutes.ts). */
export const OPENAPI_JSON_PATH = '/api/v1/openapi.json';
export const API_DOCS_PATH = '/api/v1/docs';

export interface DocsAsset {
  /** The file served, resolved when first asked for: a missing viewer fails its pages, not the service. */
  file(): string;
  type: string;
}

const swaggerUi = (name: string) => () => join(dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')), name);
const own = (name: string) => () => join(dirname(fileURLToPath(import.meta.url)), 'apiReference', name);
const CSS = 'text/css; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';

/**
 * Everything /api/v1/docs/{asset} serves: the viewer (swagger-ui-dist, from node_modules: nothing
 * is fetched from elsewhere at run time) and the page's own start script. Any other name is a 404.
 */
export const DOCS_ASSETS: Readonly<Record<string, DocsAsset>> = {
  'swagger-ui.css': { file: swaggerUi('swagger-ui.css'), type: CSS },
  'index.css': { file: swaggerUi('index.css'), type: CSS },
  'swagger-ui-bundle.js': { file: swaggerUi('swagger-ui-bundle.js'), type: JS },
  'swagger-ui-standalone-preset.js': { file: swaggerUi('swagger-ui-standalone-preset.js'), type: JS },
  'favicon-32x32.png': { file: swaggerUi('favicon-32x32.png'), type: 'image/png' },
  'favicon-16x16.png': { file: swaggerUi('favicon-16x16.png'), type: 'image/png' },
  'init.js': { file: own('init.js'), type: JS },
};
