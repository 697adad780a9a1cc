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

/**
 * The parameters of one template. `wildcards`: the route's `*name` parameters, which match across
 * slashes (`/logs/file/a/b.log`); OpenAPI's path parameters do not, so they carry
 * `x-multi-segment: true` for a tool (the conformance check) to match such paths.
 */
const parametersOf = (params: ParamsDoc | undefined, path: string, wildcards: ReadonlySet<string>, convert: (schema: JsonSchema) => unknown, where: string): unknown[] => {
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
      const multi = location === 'path' && wildcards.has(name) ? { 'x-multi-segment': true } : {};
      parameters.push({ name, in: location, required: location === 'path' || required.includes(name), ...description, schema: convert(property as JsonSchema), ...multi });
    }
  }
  const undeclared = inTemplate.filter((name) => !declared.has(name));
  if (undeclared.length > 0) throw new Error(`${where}: path parameter ${undeclared.join(', ')} not declared in params.path`);
  return parameters;
};

const needsToken = (auth: RouteAuth): boolean => auth !== 'public';

/** Routes behind `authenticate` (ops/http/authenticate.ts), which refuses with 403 besides 401. */
const passesTheWall = (auth: RouteAuth, guarded: boolean): boolean => auth === 'bearer' || auth === 'bearerOrCookie' || auth === 'optional' || guarded;

/** The methods whose bodies the body parser reads (ops/http/bodyParser.ts), before any route. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Answers the facade gives ahead of the routes (ops/http/createApp.ts: the readiness gate, the body
 * parser, the error middleware's 404 and 405, the authentication wall's 403), named once under
 * components.responses: each operation refers to those it may get, and `x-unrouted` to those of a
 * request no operation has.
 */
export const GENERIC_RESPONSES = {
  ServiceStarting: detail('Service is starting: every route but /healthz answers this until the read models are rebuilt'),
  Forbidden: detail(
    "Password change required: the user must change the password first (GET /api/v1/user/me and POST /api/v1/user/change-password still answer); or Access denied: a worker's dispatch token is good for its own task's update and finish only",
  ),
  BadRequest: detail(
    'Bad request: the X-Read-After header is not a log position; or the request body cannot be read: it is not what its Content-Encoding says, or not as long as its Content-Length',
  ),
  UnsupportedEncoding: detail('Unsupported Content-Encoding: the body parser reads gzip, deflate, br and identity'),
  BodyTooLarge: detail('Request body too large'),
  InvalidJson: invalid('The body is not valid JSON, or nested too deep: one json_invalid entry'),
  NotFound: detail('Not Found: no route has this path'),
  MethodNotAllowed: { ...detail('Method Not Allowed: the path has routes, not for this method'), headers: { Allow: 'The methods the path has' } },
} as const satisfies Record<string, ResponseDoc>;

type GenericName = keyof typeof GENERIC_RESPONSES;

const genericRef = (name: GenericName) => ({ $ref: `#/components/responses/${name}` });

/** What a request gets that reaches no operation, whatever its path: the readiness gate and the body parser run before routing. */
const BEFORE_ROUTING: Readonly<Record<number, GenericName>> = { 400: 'BadRequest', 413: 'BodyTooLarge', 415: 'UnsupportedEncoding', 422: 'InvalidJson', 503: 'ServiceStarting' };

/**
 * The document's `x-unrouted` extension: the answers to a request no operation has, which OpenAPI
 * has no place for. `path`: no operation has the path; `method`: the path has operations, not of
 * this method (OPTIONS gets the router's 200 with Allow and no body). The OpenAPI conformance check
 * (test/contracts/openApiTraffic.ts) holds such requests to these.
 */
const UNROUTED = {
  description:
    'A request whose path no operation has gets 404 {"detail": "Not Found"}; a method the path has no operation for gets 405 {"detail": "Method Not Allowed"} with Allow (404 for a method the router does not know); OPTIONS gets 200 with Allow and no body. A request that is not well-formed HTTP gets 400 without a body from the HTTP server, whatever its path. Before routing, any request may get 503 while the service starts, 400 for an X-Read-After that is no log position and, with a body, 400, 413, 415 or 422.',
  path: Object.fromEntries([[404, genericRef('NotFound')], ...Object.entries(BEFORE_ROUTING).map(([status, name]) => [status, genericRef(name)])]),
  method: Object.fromEntries([[404, genericRef('NotFound')], [405, genericRef('MethodNotAllowed')], ...Object.entries(BEFORE_ROUTING).map(([status, name]) => [status, genericRef(name)])]),
  /** Whatever its path and method: Node's HTTP parser answers a request it cannot parse itself, before the app sees it. */
  malformed: { 400: { description: 'Not well-formed HTTP (request line, header names or values, Content-Length): the HTTP server answers 400 without a body or Content-Type' } },
};

/** One response as the document shows it. */
const responseObject = (response: ResponseDoc, convert: (schema: JsonSchema) => unknown): Record<string, unknown> => {
  const content: Record<string, unknown> = {};
  if (response.schema !== undefined) content[response.contentType ?? 'application/json'] = { schema: convert(response.schema) };
  for (const [type, schema] of Object.entries(response.alternatives ?? {})) content[type] = { schema: convert(schema) };
  return {
    description: response.description,
    ...(response.headers === undefined
      ? {}
      : { headers: Object.fromEntries(Object.entries(response.headers).map(([name, text]) => [name, { description: text, schema: { type: 'string' } }])) }),
    ...(Object.keys(content).length === 0 ? {} : { content }),
  };
};

/** The generic answers a route's own answer of the same status is merged with. */
const ALSO_GENERIC: Readonly<Record<number, GenericName>> = { 400: 'BadRequest', 403: 'Forbidden', 503: 'ServiceStarting' };

const appliesTo = (name: GenericName, auth: RouteAuth, guarded: boolean): boolean => (name === 'Forbidden' ? passesTheWall(auth, guarded) : true);

/** The route's responses and those every route of its kind may give (see RouteDoc.responses). */
const responsesOf = (route: RouteDoc, auth: RouteAuth, guarded: boolean, convert: (schema: JsonSchema) => unknown): Record<string, unknown> => {
  const all = new Map<number, ResponseDoc | GenericName | null>(Object.entries(route.responses).map(([status, response]) => [Number(status), response]));
  const takesBody = BODY_METHODS.has(route.method);
  const validated = route.body !== undefined || Object.values(route.params ?? {}).some((schema) => schema !== undefined);
  const add = (status: number, response: ResponseDoc | GenericName) => {
    if (!all.has(status)) all.set(status, response);
  };
  if (needsToken(auth) || guarded) {
    const why =
      auth === 'optional'
        ? 'A token or cookie was presented and is not valid'
        : auth === 'public'
          ? 'PUBLIC_ROUTES_REQUIRE_AUTH=true and no valid Bearer token or frontend_token cookie'
          : 'Not authenticated: the token is missing, invalid or expired';
    add(401, detail(guarded && auth === 'optional' ? `${why}; or PUBLIC_ROUTES_REQUIRE_AUTH=true and none was` : why));
  }
  if (appliesTo('Forbidden', auth, guarded)) add(403, 'Forbidden');
  // X-Read-After is read ahead of every route; the body parser reads the body of these methods
  // ahead of the route, whether the route takes one or not.
  add(400, 'BadRequest');
  if (validated || takesBody) add(422, invalid());
  if (route.body !== undefined || takesBody) add(413, detail('Request body too large'));
  if (takesBody) add(415, 'UnsupportedEncoding');
  add(500, detail('Internal server error: <message>'));
  add(503, 'ServiceStarting');
  // A route's own answer of a status the facade also gives (a 403 of its own, a 503 write_conflict):
  // both reasons, when the body is the same {detail}.
  for (const [status, name] of Object.entries(ALSO_GENERIC)) {
    const own = all.get(Number(status));
    const generic = GENERIC_RESPONSES[name];
    if (typeof own === 'object' && own !== null && own.schema === generic.schema && appliesTo(name, auth, guarded)) {
      all.set(Number(status), { ...own, description: `${own.description}; or ${generic.description}` });
    }
  }
  return Object.fromEntries(
    [...all]
      .filter((entry): entry is [number, ResponseDoc | GenericName] => entry[1] !== null)
      .sort(([a], [b]) => a - b)
      .map(([status, response]) => [String(status), typeof response === 'string' ? genericRef(response) : responseObject(response, convert)]),
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
      const wildcards = new Set([...route.path.matchAll(/\*([A-Za-z_$][\w$]*)/g)].map((match) => match[1] ?? ''));
      for (const path of openApiPaths(route.path)) {
        const method = route.method.toLowerCase();
        const where = `${route.method} ${path}`;
        const item = (paths[path] ??= {});
        if (item[method] !== undefined) throw new Error(`${where} is documented twice`);
        const id = operationId(method, path);
        if (operationIds.has(id)) throw new Error(`${where}: operationId ${id} is taken`);
        operationIds.add(id);
        const parameters = parametersOf(route.params, path, wildcards, convert, where);
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
    components: {
      schemas: components,
      responses: Object.fromEntries(Object.entries(GENERIC_RESPONSES).map(([name, response]) => [name, responseObject(response, convert)])),
      securitySchemes: SECURITY_SCHEMES,
    },
    'x-unrouted': UNROUTED,
  };
};
