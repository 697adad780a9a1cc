import { detailSchema, validationErrorSchema } from './errorBodies.ts';

/**
 * How a route documents itself in the service's OpenAPI document (ops/http/openApiDocument.ts).
 * A feature lists its routes in a `*Docs.ts` file beside its routes and names the very schema
 * objects the routes validate with, never a copy: the document shows what is enforced, and a
 * change to a schema changes the document. The document's test fails for a registered route
 * without a doc and for a doc without a route.
 */

/** A JSON Schema as ajv takes it (draft-07); the document builder converts it to OpenAPI 3.1's dialect. */
export type JsonSchema = object | boolean;

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route:
 * - `bearer`: `Authorization: Bearer <access token>` (the routes behind the authentication wall);
 * - `public`: anyone (spec 5.1; PUBLIC_ROUTES_REQUIRE_AUTH closes the logs and AI routes);
 * - `optional`: public, and a caller who presents a Bearer token or the frontend_token cookie is identified;
 * - `bearerOrCookie`: a Bearer token, the frontend_token cookie or the session cookie (spec 5.2);
 * - `accessCookie`: the frontend_token cookie.
 */
export type RouteAuth = 'bearer' | 'public' | 'optional' | 'bearerOrCookie' | 'accessCookie';

export interface ResponseDoc {
  description: string;
  /** The body's schema; absent: the response has no body. */
  schema?: JsonSchema;
  /** `application/json` unless given. */
  contentType?: string;
  /** Other media types the same status may come as, with their schemas (a browser's HTML page beside the JSON error). */
  alternatives?: Readonly<Record<string, JsonSchema>>;
  /** Response headers worth knowing: name to description. */
  headers?: Readonly<Record<string, string>>;
}

/**
 * Parameters, each location as one object schema: its properties are the parameters, its
 * `required` the required ones (path parameters are always required). Pass the schema the route
 * validates that location with.
 */
export interface ParamsDoc {
  path?: JsonSchema;
  query?: JsonSchema;
  header?: JsonSchema;
  cookie?: JsonSchema;
}

export interface BodyDoc {
  schema: JsonSchema;
  /** `application/json` unless given. */
  contentType?: string;
  description?: string;
  /** True unless given. */
  required?: boolean;
}

export interface RouteDoc {
  method: HttpMethod;
  /** As registered with the router, its prefix included (Koa syntax: `:name`, `{/*rest}`). */
  path: string;
  summary: string;
  description?: string;
  /** The group's unless given. */
  auth?: RouteAuth;
  /** The group's tag unless given (a route read beside another feature's). */
  tag?: string;
  params?: ParamsDoc;
  body?: BodyDoc;
  /**
   * By status. The document adds what every route of its kind may answer unless given here: 401
   * for authenticated routes, 403 behind the authentication wall (password change required, a
   * worker's token), 422 (the list form) for parameters or bodies, 400, 413 and 415 for methods
   * whose body is parsed (POST, PUT, PATCH, DELETE), 500, and 503 while the service starts
   * (ops/http/openApiDocument.ts, GENERIC_RESPONSES). Null: the route never answers that status
   * (parameters it checks otherwise, a body refusal it answers in its own terms).
   */
  responses: Readonly<Record<number, ResponseDoc | null>>;
}

/** One feature's routes: an OpenAPI tag. */
export interface RouteDocs {
  tag: string;
  /** The tag's; one group of the tag says it (the command side's, when both sides share a tag). */
  description?: string;
  /** Of every route of the group unless the route says otherwise. */
  auth: RouteAuth;
  /** Public routes that PUBLIC_ROUTES_REQUIRE_AUTH=true closes (publicRouteGuard): a token is then needed. */
  guarded?: boolean;
  /** Schemas shown as named components: every use of the object (by identity) becomes a `$ref`. */
  schemas?: Readonly<Record<string, JsonSchema>>;
  routes: ReadonlyArray<RouteDoc>;
}

/** A JSON response. */
export const json = (description: string, schema: JsonSchema, headers?: Readonly<Record<string, string>>): ResponseDoc =>
  headers === undefined ? { description, schema } : { description, schema, headers };

/** A `{detail: <string>}` error. */
export const detail = (description: string): ResponseDoc => ({ description, schema: detailSchema });

/** 422 in either form: the list (validateRequest), or a sentence for a rule its schema cannot say. */
export const invalidOrDetail = (description: string): ResponseDoc => ({ description, schema: { oneOf: [validationErrorSchema, detailSchema] } });

/** The 422 list form (validateRequest). */
export const invalid = (description = 'Invalid request: one entry per problem (type, loc, msg, input)'): ResponseDoc => ({ description, schema: validationErrorSchema });

/** A response without a body. */
export const empty = (description: string): ResponseDoc => ({ description });

const STRING = { type: 'string' } as const;

/**
 * An object schema for a response: every property listed is present (`required`); names in
 * `optional` may be absent. Response schemas describe what the route builds; nothing validates them.
 */
export const objectOf = (properties: Readonly<Record<string, JsonSchema>>, optional: ReadonlyArray<string> = []): object => ({
  type: 'object',
  properties,
  required: Object.keys(properties).filter((name) => !optional.includes(name)),
});

/** `{message: string}`. */
export const messageSchema = objectOf({ message: STRING });
