import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { isIsoDatetime } from '../../shared/item-types/validator.ts';
import type { RecordedExchange } from '../support/trafficRecorder.ts';

/**
 * The OpenAPI conformance check (issue 35, "the contract is complete"): answers the service gave
 * (recorded by test/support/trafficRecorder.ts) held against its OpenAPI 3.1 document. Each answer
 * must belong to a documented operation (path template and method; HEAD is GET's), with a
 * documented status, a documented content type, and a JSON body that the documented schema
 * accepts, validated by Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1). A request that no
 * operation has (an unknown path, a method the path does not have) must get one of the answers the
 * document's `x-unrouted` extension lists (404, 405...): a route the document misses answers
 * something else and is reported. A bare answer (no Content-Type, no body) of a status
 * `x-unrouted.malformed` lists is the HTTP server's refusal of a request it could not parse.
 */

type Json = Record<string, unknown>;

export type ProblemKind =
  | 'undocumented path'
  | 'undocumented method'
  | 'undocumented status'
  | 'undocumented content type'
  | 'body does not match'
  | 'body is not JSON'
  | 'body undocumented'
  | 'body missing';

export interface TrafficProblem {
  kind: ProblemKind;
  method: string;
  /** The documented template the request matched, or the path itself (without its query) when none. */
  template: string;
  status: number;
  /** What is wrong: the first schema error, the content type... */
  message: string;
  /** How many recorded answers had this very problem. */
  count: number;
  /** One of them: the path as sent, the value the schema refused, and the test that sent it when known. */
  example: { path: string; value?: string; test?: string };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** The extra keywords OpenAPI 3.1's schema dialect adds to 2020-12 (annotations for a validator). */
const OPENAPI_KEYWORDS = ['discriminator', 'xml', 'externalDocs', 'example'];
/** A base under which the document's components are registered with Ajv, for `$ref`s to resolve. */
const COMPONENTS_ID = 'https://openapi.invalid/components';

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const asObject = (value: unknown): Json => (isObject(value) ? value : {});

/** `#/a/b~1c` -> the value there. */
const resolvePointer = (doc: unknown, ref: string): unknown =>
  ref
    .replace(/^#\/?/, '')
    .split('/')
    .filter((part) => part !== '')
    .map((part) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((at, key) => (Array.isArray(at) ? at[Number(key)] : isObject(at) ? at[key] : undefined), doc);

/** A `$ref` object (a response, a parameter) resolved in the document; other values as they are. */
const deref = (doc: unknown, value: unknown): Json => {
  let node = asObject(value);
  for (let hops = 0; typeof node.$ref === 'string' && hops < 10; hops += 1) node = asObject(resolvePointer(doc, node.$ref));
  return node;
};

// ---------------------------------------------------------------------------------------------
// Matching a request to a documented operation

interface Segment {
  literal?: string;
  /** A path parameter; `slashes`: it may span several segments (a Koa `*name`, marked x-multi-segment). */
  param?: { slashes: boolean };
}

interface Template {
  path: string;
  segments: Segment[];
}

const splitPath = (path: string): string[] => path.split('/').slice(1);

const templatesOf = (doc: Json): Template[] =>
  Object.entries(asObject(doc.paths)).map(([path, item]) => {
    const multi = new Set<string>();
    for (const method of METHODS) {
      for (const parameter of (asObject(item)[method] as Json | undefined)?.parameters as unknown[] | undefined ?? []) {
        const node = deref(doc, parameter);
        if (node.in === 'path' && node['x-multi-segment'] === true) multi.add(String(node.name));
      }
    }
    const segments = splitPath(path).map((segment): Segment => {
      const param = /^\{([^{}]+)\}$/.exec(segment);
      return param ? { param: { slashes: multi.has(param[1] ?? '') } } : { literal: segment.toLowerCase() };
    });
    return { path, segments };
  });

/**
 * How well `template` matches the segments, or null: a literal beats a parameter, a parameter a
 * multi-segment one (OpenAPI: concrete paths are matched before templated ones). Literals compare
 * without case, as the router does (koa-router is not case sensitive).
 */
const matchScore = (template: Template, segments: string[]): number[] | null => {
  const score: number[] = [];
  const walk = (at: number, from: number): boolean => {
    if (at === template.segments.length) return from === segments.length;
    const segment = template.segments[at] as Segment;
    if (segment.literal !== undefined) {
      if (segments[from]?.toLowerCase() !== segment.literal) return false;
      score.push(2);
      return walk(at + 1, from + 1);
    }
    if (!segment.param?.slashes) {
      if (segments[from] === undefined || segments[from] === '') return false;
      score.push(1);
      return walk(at + 1, from + 1);
    }
    score.push(0);
    for (let end = segments.length; end > from; end -= 1) if (walk(at + 1, end)) return true;
    return false;
  };
  return walk(0, 0) ? score : null;
};

const better = (a: number[], b: number[]): boolean => {
  for (let index = 0; index < Math.min(a.length, b.length); index += 1) if (a[index] !== b[index]) return (a[index] ?? 0) > (b[index] ?? 0);
  return a.length > b.length;
};

/** The documented template of a request path (query excluded), or null. A trailing slash is optional, as for the router. */
export const matchTemplate = (templates: ReadonlyArray<Template>, path: string): Template | null => {
  const candidates = [path];
  if (path.length > 1 && path.endsWith('/')) candidates.push(path.slice(0, -1));
  for (const candidate of candidates) {
    const segments = splitPath(candidate);
    let best: { template: Template; score: number[] } | null = null;
    for (const template of templates) {
      const score = matchScore(template, segments);
      if (score !== null && (best === null || better(score, best.score))) best = { template, score };
    }
    if (best !== null) return best.template;
  }
  return null;
};

// ---------------------------------------------------------------------------------------------
// Schemas

/** Ajv for the document's schemas: 2020-12, strict about keywords, with the formats the service uses. */
const schemaCompiler = (doc: Json) => {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, strictTuples: false, allowUnionTypes: true, allErrors: false });
  // The package is CommonJS: its function is `default` under both module systems.
  ajvFormats.default(ajv);
  ajv.addFormat('iso-datetime', { type: 'string', validate: isIsoDatetime });
  for (const keyword of OPENAPI_KEYWORDS) ajv.addKeyword({ keyword });
  // Local refs (`#/components/schemas/X`, and below it) point into one schema registered under an id.
  const repoint = (schema: unknown): unknown => JSON.parse(JSON.stringify(schema).replace(/"#\/components\/schemas\//g, `"${COMPONENTS_ID}#/$defs/`));
  ajv.addSchema({ $id: COMPONENTS_ID, $defs: repoint(asObject(asObject(doc.components).schemas)) as Json });
  const compiled = new Map<string, ValidateFunction>();
  return (schema: unknown): ValidateFunction => {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (validate === undefined) {
      validate = ajv.compile(typeof schema === 'boolean' ? { allOf: [schema] } : (repoint(schema) as Json));
      compiled.set(key, validate);
    }
    return validate;
  };
};

/** The first schema error as a sentence, and the value it is about (shown apart: equal errors on other values are one problem). */
const firstError = (errors: ReadonlyArray<ErrorObject> | null | undefined, body: unknown): { message: string; value: string } => {
  const error = errors?.[0];
  if (error === undefined) return { message: 'does not match', value: '' };
  const at = error.instancePath === '' ? 'the body' : error.instancePath;
  const value = error.instancePath === '' ? body : resolvePointer(body, `#${error.instancePath}`);
  const params = error.params && Object.keys(error.params).length > 0 ? ` ${JSON.stringify(error.params)}` : '';
  return { message: `${at} ${error.message ?? 'is invalid'}${params}`, value: JSON.stringify(value)?.slice(0, 120) ?? 'undefined' };
};

// ---------------------------------------------------------------------------------------------
// The check

const baseType = (contentType: string): string => contentType.split(';')[0]?.trim().toLowerCase() ?? '';

const isJsonType = (type: string): boolean => /^application\/(?:[\w.+-]*\+)?json$/.test(type);

/** The documented media type an answer's Content-Type falls under: exact, `type/*`, then `* /*`. */
const mediaFor = (content: Json, contentType: string): { type: string; schema: unknown } | null => {
  const actual = baseType(contentType);
  const entries = Object.entries(content).map(([type, media]) => ({ type: baseType(type), schema: asObject(media).schema }));
  return (
    entries.find((entry) => entry.type === actual) ??
    entries.find((entry) => entry.type.endsWith('/*') && entry.type !== '*/*' && actual.startsWith(entry.type.slice(0, -1))) ??
    entries.find((entry) => entry.type === '*/*') ??
    null
  );
};

/** The documented response of a status: exact, then its range (`4XX`), then `default`. */
const responseFor = (responses: Json, status: number): unknown => responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;

type Finding = Omit<TrafficProblem, 'count' | 'example'> & { value?: string };

/** The checker of one document: each exchange to the problems it has (none when it conforms). */
export const trafficChecker = (doc: Json) => {
  const templates = templatesOf(doc);
  const compile = schemaCompiler(doc);
  const unrouted = asObject(doc['x-unrouted']);

  /** The body against one documented response. */
  const checkBody = (exchange: RecordedExchange, response: Json, where: Omit<Finding, 'kind' | 'message'>): Finding[] => {
    const found = (kind: ProblemKind, message: string): Finding[] => [{ kind, message, ...where }];
    const content = isObject(response.content) ? response.content : null;
    // HEAD and answers not read as text (a stream's head, a compressed body): the content type only.
    const read = exchange.method !== 'HEAD' && exchange.unread !== true;
    const hasBody = exchange.bodyLength > 0 || exchange.unread === true;
    if (content === null || Object.keys(content).length === 0) {
      // Redirects and the like may carry a short text Koa writes; a JSON body is a body the document does not describe.
      if (read && hasBody && isJsonType(baseType(exchange.contentType))) return found('body undocumented', `a ${baseType(exchange.contentType)} body where the document describes none`);
      return [];
    }
    if (!hasBody) {
      if (!read) return [];
      return found('body missing', `an empty body where the document describes ${Object.keys(content).join(', ')}`);
    }
    const media = mediaFor(content, exchange.contentType);
    if (media === null) return found('undocumented content type', `${exchange.contentType || 'no Content-Type'} (documented: ${Object.keys(content).join(', ')})`);
    if (!read || !isJsonType(baseType(exchange.contentType)) || exchange.truncated === true) return [];
    if (!('json' in exchange)) return found('body is not JSON', `${exchange.contentType} that does not parse`);
    if (media.schema === undefined) return [];
    const validate = compile(media.schema);
    if (validate(exchange.json)) return [];
    const { message, value } = firstError(validate.errors, exchange.json);
    return [{ kind: 'body does not match', message, value, ...where }];
  };

  return (exchange: RecordedExchange): Finding[] => {
    const path = exchange.path.split('?')[0] ?? '';
    const method = exchange.method.toUpperCase();
    const template = path.startsWith('/') ? matchTemplate(templates, path) : null;
    const item = template === null ? null : asObject(asObject(doc.paths)[template.path]);
    const operation = item === null ? undefined : (item[method.toLowerCase()] ?? (method === 'HEAD' ? item.get : undefined));
    const where = { method, template: template?.path ?? path, status: exchange.status };
    // The HTTP server's own refusal of what it cannot parse (no Content-Type, no body): the request never reached a route.
    if (exchange.contentType === '' && exchange.bodyLength === 0 && exchange.unread !== true && asObject(unrouted.malformed)[String(exchange.status)] !== undefined) return [];
    if (operation === undefined) {
      // OPTIONS on a path some operation has: the router's answer, the methods in Allow and no body.
      if (item !== null && method === 'OPTIONS' && (exchange.status === 200 || exchange.status === 204) && exchange.bodyLength === 0) return [];
      const allowed = asObject(item === null ? unrouted.path : unrouted.method);
      const response = allowed[String(exchange.status)];
      if (response === undefined) {
        const kind: ProblemKind = item === null ? 'undocumented path' : 'undocumented method';
        const listed = Object.keys(allowed).join(', ') || 'none';
        return [{ kind, ...where, message: `${exchange.status} is not an answer to a request no operation has (x-unrouted: ${listed})` }];
      }
      return checkBody(exchange, deref(doc, response), where);
    }
    const responses = asObject(asObject(operation).responses);
    const response = responseFor(responses, exchange.status);
    if (response === undefined) return [{ kind: 'undocumented status', ...where, message: `documented: ${Object.keys(responses).join(', ')}` }];
    return checkBody(exchange, deref(doc, response), where);
  };
};

/** Every exchange checked; equal problems (kind, method, template, status, message) counted once, with one example. */
export const checkTraffic = (doc: Json, exchanges: Iterable<RecordedExchange>): TrafficProblem[] => {
  const check = trafficChecker(doc);
  const problems = new Map<string, TrafficProblem>();
  for (const exchange of exchanges) {
    for (const finding of check(exchange)) {
      const key = JSON.stringify([finding.kind, finding.method, finding.template, finding.status, finding.message]);
      const known = problems.get(key);
      if (known) known.count += 1;
      else {
        const { value, ...problem } = finding;
        const example = { path: exchange.path, ...(value === undefined ? {} : { value }), ...(exchange.test === undefined ? {} : { test: exchange.test }) };
        problems.set(key, { ...problem, count: 1, example });
      }
    }
  }
  return [...problems.values()].sort((a, b) => a.template.localeCompare(b.template) || a.method.localeCompare(b.method) || a.status - b.status);
};

/** One line per problem: what a failing run prints. */
export const formatProblems = (problems: ReadonlyArray<TrafficProblem>): string =>
  problems
    .map((problem) => {
      const { path, value, test } = problem.example;
      const example = `${path.slice(0, 120)}${value === undefined ? '' : ` with ${value}`}${test === undefined ? '' : `, in "${test}"`}`;
      return `${problem.kind}: ${problem.method} ${problem.template} ${problem.status}: ${problem.message} (${problem.count}x, e.g. ${example})`;
    })
    .join('\n');

/** Every exchange recorded in `dir` (all processes' files); a line that does not parse is an error. */
export const readTraffic = (dir: string): RecordedExchange[] =>
  readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .sort()
    .flatMap((name) =>
      readFileSync(join(dir, name), 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line, index) => {
          try {
            return JSON.parse(line) as RecordedExchange;
          } catch {
            throw new Error(`${join(dir, name)}:${index + 1} is not a recorded exchange: ${line.slice(0, 200)}`);
          }
        }),
    );

// ---------------------------------------------------------------------------------------------
// The document's own shape

/**
 * What the check relies on in the document, as a JSON Schema (not the whole OpenAPI 3.1 schema: no
 * OpenAPI parser is installed, see docs/decisions.md): the version, path keys, operations with
 * responses keyed by status and each with a description, media types with schemas, path
 * parameters required, and the `x-unrouted` answers.
 */
const ref = { type: 'object', required: ['$ref'], properties: { $ref: { type: 'string', pattern: '^#/' } } };
const response = {
  anyOf: [
    ref,
    {
      type: 'object',
      required: ['description'],
      properties: {
        description: { type: 'string' },
        headers: { type: 'object' },
        content: { type: 'object', additionalProperties: { type: 'object', required: ['schema'], properties: { schema: { type: ['object', 'boolean'] } } } },
      },
    },
  ],
};
const responses = { type: 'object', minProperties: 1, propertyNames: { pattern: '^(?:[1-5](?:\\d\\d|XX)|default)$' }, additionalProperties: response };
const parameter = {
  anyOf: [
    ref,
    {
      type: 'object',
      required: ['name', 'in', 'schema'],
      properties: { name: { type: 'string' }, in: { enum: ['path', 'query', 'header', 'cookie'] }, required: { type: 'boolean' } },
      if: { properties: { in: { const: 'path' } } },
      then: { required: ['required'], properties: { required: { const: true } } },
    },
  ],
};
const operation = {
  type: 'object',
  required: ['responses'],
  properties: { operationId: { type: 'string' }, parameters: { type: 'array', items: parameter }, responses, security: { type: 'array' } },
};
export const OPENAPI_SHAPE = {
  type: 'object',
  required: ['openapi', 'info', 'paths'],
  properties: {
    openapi: { type: 'string', pattern: '^3\\.1\\.\\d+$' },
    info: { type: 'object', required: ['title', 'version'], properties: { title: { type: 'string' }, version: { type: 'string' } } },
    paths: {
      type: 'object',
      propertyNames: { pattern: '^/' },
      additionalProperties: { type: 'object', properties: Object.fromEntries(METHODS.map((method) => [method, operation])) },
    },
    components: { type: 'object', properties: { schemas: { type: 'object' }, responses: { type: 'object', additionalProperties: response } } },
    'x-unrouted': { type: 'object', required: ['path', 'method'], properties: { path: responses, method: responses, malformed: responses } },
  },
};

/**
 * The document's problems as sentences (none: it holds together): its shape (OPENAPI_SHAPE), every
 * `$ref` resolving, path parameters matching their templates, unique operation ids and every schema
 * compiling under Ajv's strict 2020-12 mode.
 */
export const documentProblems = (doc: Json): string[] => {
  const problems: string[] = [];
  const shape = new Ajv2020({ allErrors: true, strict: false }).compile(OPENAPI_SHAPE);
  if (!shape(doc)) problems.push(...(shape.errors ?? []).slice(0, 20).map((error) => `shape: ${error.instancePath || '/'} ${error.message ?? ''}`));
  const walk = (node: unknown, at: string, visit: (value: Json, at: string) => void): void => {
    if (Array.isArray(node)) node.forEach((inner, index) => walk(inner, `${at}/${index}`, visit));
    else if (isObject(node)) {
      visit(node, at);
      for (const [key, inner] of Object.entries(node)) walk(inner, `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, visit);
    }
  };
  walk(doc, '#', (node, at) => {
    if (typeof node.$ref === 'string' && resolvePointer(doc, node.$ref) === undefined) problems.push(`${at}: $ref ${node.$ref} resolves to nothing`);
  });
  const compile = schemaCompiler(doc);
  const ids = new Set<string>();
  for (const [path, item] of Object.entries(asObject(doc.paths))) {
    const inTemplate = [...path.matchAll(/\{([^{}]+)\}/g)].map((match) => match[1]).sort();
    for (const method of METHODS) {
      const op = asObject(item)[method];
      if (!isObject(op)) continue;
      const where = `${method.toUpperCase()} ${path}`;
      if (typeof op.operationId === 'string') {
        if (ids.has(op.operationId)) problems.push(`${where}: operationId ${op.operationId} is taken`);
        ids.add(op.operationId);
      }
      const parameters = ((op.parameters as unknown[] | undefined) ?? []).map((value) => deref(doc, value));
      const inPath = parameters.filter((value) => value.in === 'path').map((value) => String(value.name)).sort();
      if (JSON.stringify(inPath) !== JSON.stringify(inTemplate)) problems.push(`${where}: path parameters ${inPath.join(', ') || 'none'}, template ${inTemplate.join(', ') || 'none'}`);
    }
  }
  walk(doc.paths, '#/paths', (node, at) => {
    if ('schema' in node && (isObject(node.schema) || typeof node.schema === 'boolean')) {
      try {
        compile(node.schema);
      } catch (error) {
        problems.push(`${at}/schema: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  });
  for (const name of Object.keys(asObject(asObject(doc.components).schemas))) {
    try {
      compile({ $ref: `#/components/schemas/${name}` });
    } catch (error) {
      problems.push(`#/components/schemas/${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return problems;
};
