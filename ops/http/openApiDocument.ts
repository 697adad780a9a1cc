import type { JsonSchema, ParamsDoc, ResponseDoc, RouteAuth, RouteDoc, RouteDocs } from '../../shared/http/routeDocs.ts';
import { detail, invalid } from '../../shared/http/routeDocs.ts';
import { anyDetailSchema, detailSchema, objectDetailSchema, validationEntrySchema, validationErrorSchema } from '../../shared/http/errorBodies.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { toOpenApiSchema, type SchemaContext } from './toOpenApiSchema.ts';

/**
 * The service's OpenAPI 3.1 document, built from the features' route docs (shared/http/routeDocs.ts),
 * whose schemas are the objects the routes validate with. Served at /api/v1/openapi.json
 * (apiReferenceRoutes.ts).
 */

export interface ApiInfo {
  title: string;
  version: string;
  description: string;
}

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, Record<string, unknown>>> };

/** Named everywhere they appear. */
const SHARED_SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  Detail: detailSchema,
  DetailObject: objectDetailSchema,
  AnyDetail: anyDetailSchema,
  ValidationError: validationErrorSchema,
  ValidationEntry: validationEntrySchema,
  ObjectId: lauiSchema,
};

const SECURITY_SCHEMES = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'The access token (RS256 JWT, 24 hours): the frontend_token cookie POST /api/v1/token sets, as GET /api/v1/get-mcp-token hands it out.',
  },
  frontendToken: { type: 'apiKey', in: 'cookie', name: 'frontend_token', description: 'The access token as a browser holds it (set by POST /api/v1/token).' },
  sessionCookie: { type: 'apiKey', in: 'cookie', name: 'session', description: 'The login session (set by POST /api/v1/login).' },
} as const;

/** Security requirements by auth kind; `{}` makes the others optional. */
const SECURITY: Readonly<Record<RouteAuth, ReadonlyArray<Record<string, never[]>>>> = {
  bearer: [{ bearerAuth: [] }],
  public: [],
  optional: [{}, { bearerAuth: [] }, { frontendToken: [] }],
  bearerOrCookie: [{ bearerAuth: [] }, { frontendToken: [] }, { sessionCookie: [] }],
  accessCookie: [{ frontendToken: [] }],
};

const COMPONENT_NAME = /^[A-Za-z0-9._-]+$/;
const PARAM_LOCATIONS = ['path', 'query', 'header', 'cookie'] as const;

/**
 * The OpenAPI path templates of a Koa (path-to-regexp 8) route path: `:name` and `*name` become
 * `{name}`; an optional group `{...}` gives the path without it and the path with it.
 */
export const openApiPaths = (koaPath: string): string[] => {
  const group = /\{([^{}]*)\}/.exec(koaPath);
  if (group) {
    const before = koaPath.slice(0, group.index);
    const after = koaPath.slice(group.index + group[0].length);
    return [...new Set([...openApiPaths(before + after), ...openApiPaths(before + (group[1] ?? '') + after)])];
  }
  if (/[\\"()?+]/.test(koaPath)) throw new Error(`Route path ${koaPath}: syntax the OpenAPI document does not translate`);
  return [koaPath.replace(/[:*]([A-Za-z_$][\w$]*)/g, '{$1}')];
};

/** The names of a template's path parameters, in order. */
export const templateParams = (path: string): string[] => [...path.matchAll(/\{([^{}]+)\}/g)].map((match) => match[1] ?? '');

const pascal = (text: string): string =>
  text
    .split(/[^A-Za-z0-9]+/)
    .filter((part) => part !== '')
    .map((part) => part[0]?.toUpperCase() + part.slice(1))
    .join('');

/** `post /api/v1/task/update/{task_laui}` -> `postTaskUpdateByTaskLaui`. */
const operationId = (method: string, path: string): string =>
  method.toLowerCase() +
  path
    .replace(/^\/api\/v1(?=\/|$)/, '')
    .split('/')
    .map((segment) => (segment.startsWith('{') ? `By${pascal(segment)}` : pascal(segment)))
    .join('');

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Components by object identity: each named object is one component, and each name one object. */
const componentRegistry = (groups: ReadonlyArray<RouteDocs>) => {
  const nameOf = new Map<object, string>();
  const schemaOf = new Map<string, object>();
  const add = (name: string, schema: JsonSchema) => {
    if (!COMPONENT_NAME.test(name)) throw new Error(`Schema name ${name}: letters, digits, '.', '_' and '-' only`);
    if (typeof schema !== 'object') throw new Error(`Schema ${name}: a boolean schema cannot be named`);
    const known = schemaOf.get(name);
    if (known !== undefined && known !== schema) throw new Error(`Two different schemas are named ${name}`);
    const other = nameOf.get(schema);
    if (other !== undefined && other !== name) throw new Error(`One schema is named both ${other} and ${name}`);
    nameOf.set(schema, name);
    schemaOf.set(name, schema);
  };
  for (const [name, schema] of Object.entries(SHARED_SCHEMAS)) add(name, schema);
  for (const group of groups) for (const [name, schema] of Object.entries(group.schemas ?? {})) add(name, schema);
  const context: SchemaContext = {
    refOf: (schema) => {
      const name = nameOf.get(schema);
      return name === undefined ? undefined : `#/components/schemas/${name}`;
    },
  };
  const convert = (schema: JsonSchema): unknown => toOpenApiSchema(schema, context);
  const components = Object.fromEntries([...schemaOf].map(([name, schema]) => [name, toOpenApiSchema(schema, context, `#/components/schemas/${name}`)]));
  return { convert, components };
};

const parametersOf = (params: ParamsDoc | undefined, path: string, convert: (schema: JsonSchema) => unknown, where: string): unknown[] => {
  const inTemplate = templateParams(path);
  const parameters: unknown[] = [];
  const declared = new Set<string>();
  for (const location of PARAM_LOCATIONS) {
    const schema = params?.[location];
    if (schema === undefined) continue;
    if (!isObject(schema) || !isObject(schema.properties)) throw new Error(`${where}: ${location} parameters must be an object schema with properties`);
    const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
    for (const [name, property] of Object.entries(schema.properties)) {
      // A path parameter of an optional group is absent from the template without the group.
      if (location === 'path' && !inTemplate.includes(name)) continue;
      if (location === 'path') declared.add(name);
      const description = isObject(property) && typeof property.description === 'string' ? { description: property.description } : {};
      parameters.push({ name, in: location, required: location === 'path' || required.includes(name), ...description, schema: convert(property as JsonSchema) });
    }
  }
  const undeclared = inTemplate.filter((name) => !declared.has(name));
  if (undeclared.length > 0) throw new Error(`${where}: path parameter ${undeclared.join(', ')} not declared in params.path`);
  return parameters;
};

const needsToken = (auth: RouteAuth): boolean => auth !== 'public';

/** The route's responses and those every route of its kind may give (see RouteDoc.responses). */
const responsesOf = (route: RouteDoc, auth: RouteAuth, guarded: boolean, convert: (schema: JsonSchema) => unknown): Record<string, unknown> => {
  const all = new Map<number, ResponseDoc | null>(Object.entries(route.responses).map(([status, response]) => [Number(status), response]));
  const validated = route.body !== undefined || Object.values(route.params ?? {}).some((schema) => schema !== undefined);
  if ((needsToken(auth) || guarded) && !all.has(401)) {
    const why =
      auth === 'optional'
        ? 'A token or cookie was presented and is not valid'
        : auth === 'public'
          ? 'PUBLIC_ROUTES_REQUIRE_AUTH=true and no valid Bearer token or frontend_token cookie'
          : 'Not authenticated: the token is missing, invalid or expired';
    all.set(401, detail(guarded && auth === 'optional' ? `${why}; or PUBLIC_ROUTES_REQUIRE_AUTH=true and none was` : why));
  }
  if (validated && !all.has(422)) all.set(422, invalid());
  if (route.body !== undefined && !all.has(413)) all.set(413, detail('Request body too large'));
  if (!all.has(500)) all.set(500, detail('Internal server error: <message>'));
  return Object.fromEntries(
    [...all]
      .filter((entry): entry is [number, ResponseDoc] => entry[1] !== null)
      .sort(([a], [b]) => a - b)
      .map(([status, response]) => [
        String(status),
        {
          description: response.description,
          ...(response.headers === undefined
            ? {}
            : { headers: Object.fromEntries(Object.entries(response.headers).map(([name, text]) => [name, { description: text, schema: { type: 'string' } }])) }),
          ...(response.schema === undefined ? {} : { content: { [response.contentType ?? 'application/json']: { schema: convert(response.schema) } } }),
        },
      ]),
  );
};

/** The OpenAPI 3.1 document of `groups`. Throws on a doc it cannot express (duplicate operation, undeclared path parameter...). */
export const openApiDocument = (groups: ReadonlyArray<RouteDocs>, info: ApiInfo): OpenApiDocument => {
  const { convert, components } = componentRegistry(groups);
  const paths: OpenApiDocument['paths'] = {};
  const operationIds = new Set<string>();
  const tags = new Map<string, string>();
  for (const group of groups) {
    if (!tags.get(group.tag)) tags.set(group.tag, group.description ?? '');
    for (const route of group.routes) {
      if (route.tag !== undefined && !tags.has(route.tag)) tags.set(route.tag, '');
      const auth = route.auth ?? group.auth;
      for (const path of openApiPaths(route.path)) {
        const method = route.method.toLowerCase();
        const where = `${route.method} ${path}`;
        const item = (paths[path] ??= {});
        if (item[method] !== undefined) throw new Error(`${where} is documented twice`);
        const id = operationId(method, path);
        if (operationIds.has(id)) throw new Error(`${where}: operationId ${id} is taken`);
        operationIds.add(id);
        const parameters = parametersOf(route.params, path, convert, where);
        item[method] = {
          tags: [route.tag ?? group.tag],
          summary: route.summary,
          ...(route.description === undefined ? {} : { description: route.description }),
          operationId: id,
          security: SECURITY[auth],
          ...(parameters.length === 0 ? {} : { parameters }),
          ...(route.body === undefined
            ? {}
            : {
                requestBody: {
                  required: route.body.required ?? true,
                  ...(route.body.description === undefined ? {} : { description: route.body.description }),
                  content: { [route.body.contentType ?? 'application/json']: { schema: convert(route.body.schema) } },
                },
              }),
          responses: responsesOf(route, auth, group.guarded === true, convert),
        };
      }
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    servers: [{ url: '/', description: 'This service' }],
    tags: [...tags].map(([name, description]) => (description === '' ? { name } : { name, description })),
    paths,
    components: { schemas: components, securitySchemes: SECURITY_SCHEMES },
  };
};
