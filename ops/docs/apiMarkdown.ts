import type { OpenApiDocument } from '../http/openApiDocument.ts';

/**
 * docs/api.md from the service's OpenAPI document (ops/http/openApiDocument.ts): every operation
 * with its authentication, parameters, request body and responses, then the named schemas. Pure:
 * the same document gives the same text, so a test can hold the committed file to it.
 */

type Json = Record<string, unknown>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Nested object fields are listed down to this depth (a.b.c.d); deeper ones show as `object`. */
const MAX_DEPTH = 4;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const asObject = (value: unknown): Json => (isObject(value) ? value : {});
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const asString = (value: unknown): string => (typeof value === 'string' ? value : '');

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens. */
export const anchorOf = (heading: string): string =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');

/**
 * Prose of the document as Markdown: `<name>` placeholders stay visible (a renderer would take them
 * for HTML tags), code spans are left as they are.
 */
export const prose = (text: string): string =>
  text
    .split(/(`[^`]*`)/)
    .map((part) => (part.startsWith('`') ? part : part.replace(/&(?=[#\w]+;)/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')))
    .join('');

/** Text fit for a table cell: pipes escaped, line breaks as <br>. */
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>');

const code = (text: string): string => (text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``);

const schemaHeading = (name: string): string => `${name} (schema)`;
const operationHeading = (method: string, path: string): string => `${method.toUpperCase()} ${path}`;

const refName = (ref: string): string => decodeURIComponent(ref.replace('#/components/schemas/', '')).replace(/~1/g, '/').replace(/~0/g, '~');

const link = (name: string): string => `[${name}](#${anchorOf(schemaHeading(name))})`;

/** A short type expression of a schema: `string or null`, `array of [Group](#…)`, `one of "a", "b"`. */
export const typeText = (schema: unknown): string => {
  if (schema === true || (isObject(schema) && Object.keys(schema).filter((key) => key !== 'description').length === 0)) return 'any';
  if (schema === false) return 'nothing';
  const node = asObject(schema);
  if (typeof node.$ref === 'string') return link(refName(node.$ref));
  if ('const' in node) return code(JSON.stringify(node.const));
  if (Array.isArray(node.enum)) return `one of ${node.enum.map((value) => code(JSON.stringify(value))).join(', ')}`;
  for (const keyword of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(node[keyword])) return `one of: ${asArray(node[keyword]).map(typeText).join('; ')}`;
  }
  if (Array.isArray(node.allOf)) return `all of: ${node.allOf.map(typeText).join('; ')}`;
  const types = Array.isArray(node.type) ? node.type.map(asString) : typeof node.type === 'string' ? [node.type] : [];
  const named = types.map((type) => (type === 'array' ? `array of ${typeText(node.items ?? true)}` : type));
  if (named.length === 0) return isObject(node.properties) ? 'object' : 'any';
  return named.join(' or ');
};

/** The constraints of a schema worth reading beside its type. */
const rulesOf = (schema: unknown): string[] => {
  const node = asObject(schema);
  const rules: string[] = [];
  if (typeof node.format === 'string') rules.push(node.format === 'iso-datetime' ? 'ISO 8601 date-time' : `format ${node.format}`);
  if (typeof node.pattern === 'string') rules.push(`pattern ${code(node.pattern)}`);
  const range = (min: unknown, max: unknown, unit: string): void => {
    const low = typeof min === 'number' ? min : null;
    const high = typeof max === 'number' ? max : null;
    if (low !== null && high !== null) rules.push(`${low}-${high}${unit}`);
    else if (low !== null) rules.push(unit === '' ? `≥ ${low}` : low === 1 && unit === ' characters' ? 'not empty' : `at least ${low}${unit}`);
    else if (high !== null) rules.push(unit === '' ? `≤ ${high}` : `at most ${high}${unit}`);
  };
  range(node.minimum, node.maximum, '');
  range(node.minLength, node.maxLength, ' characters');
  range(node.minItems, node.maxItems, ' items');
  if ('default' in node) rules.push(`default ${code(JSON.stringify(node.default))}`);
  return rules;
};

interface FieldRow {
  /** The field's path; null for the row of the keys an open object takes besides its fields. */
  name: string | null;
  schema: unknown;
  required: boolean;
}

/** The fields of an object schema, nested objects and arrays of objects flattened (`a.b`, `a[].b`). */
const fieldRows = (schema: unknown, prefix = '', depth = 1): FieldRow[] => {
  const node = asObject(schema);
  const properties = asObject(node.properties);
  const required = new Set(asArray(node.required).map(asString));
  const rows: FieldRow[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const path = `${prefix}${name}`;
    rows.push({ name: path, schema: property, required: required.has(name) });
    if (depth >= MAX_DEPTH) continue;
    const inner = asObject(property);
    if (isObject(inner.properties)) rows.push(...fieldRows(inner, `${path}.`, depth + 1));
    else if (isObject(inner.items) && isObject(inner.items.properties)) rows.push(...fieldRows(inner.items, `${path}[].`, depth + 1));
  }
  const extra = node.additionalProperties;
  if (extra !== undefined && extra !== false && prefix === '') rows.push({ name: null, schema: extra === true ? {} : extra, required: false });
  return rows;
};

const fieldTable = (schema: unknown): string[] => {
  const rows = fieldRows(schema);
  if (rows.length === 0) return [];
  return [
    '| Field | Type | Required | Notes |',
    '|---|---|---|---|',
    ...rows.map((row) => {
      const notes = [asString(asObject(row.schema).description), ...rulesOf(row.schema)].filter((text) => text !== '').map(prose);
      return `| ${row.name === null ? 'any other field' : cell(code(row.name))} | ${cell(typeText(row.schema))} | ${row.required ? 'yes' : 'no'} | ${cell(notes.join('; '))} |`;
    }),
  ];
};

/** A schema as a reader needs it: its description, its type, the table of its fields. */
const schemaBlock = (schema: unknown): string[] => {
  const node = asObject(schema);
  const lines: string[] = [];
  const description = asString(node.description);
  if (description !== '') lines.push(prose(description), '');
  const table = fieldTable(schema);
  const rules = rulesOf(schema);
  if (table.length === 0 || typeText(schema) !== 'object') lines.push(`Type: ${typeText(schema)}${rules.length > 0 ? ` (${rules.join('; ')})` : ''}.`, '');
  if (table.length > 0) lines.push(...table, '');
  return lines;
};

/** The schema's type for a table, with `(fields below)` when its own field table follows. */
const bodyType = (schema: unknown): { text: string; table: boolean } => {
  const table = fieldRows(schema).length > 0 && !isObject(asObject(schema).$ref);
  return { text: `${typeText(schema)}${table ? ' (fields below)' : ''}`, table };
};

/** How a caller authenticates for one operation, from its security requirements and the schemes. */
const authText = (security: unknown, schemes: Json): string => {
  const alternatives = asArray(security).map((requirement) => Object.keys(asObject(requirement)));
  if (alternatives.length === 0) return 'none (public)';
  const label = (name: string): string => {
    const scheme = asObject(schemes[name]);
    if (scheme.type === 'http' && scheme.scheme === 'bearer') return '`Authorization: Bearer <access token>`';
    if (scheme.type === 'apiKey') return `the ${asString(scheme.name)} ${asString(scheme.in)}`;
    return name;
  };
  const ways = alternatives.filter((names) => names.length > 0).map((names) => names.map(label).join(' and '));
  const optional = alternatives.some((names) => names.length === 0);
  return optional ? `optional: ${ways.join(', or ')} identifies the caller` : ways.join(', or ');
};

interface Operation {
  method: string;
  path: string;
  op: Json;
}

const operationsOf = (doc: OpenApiDocument): Operation[] =>
  Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter((method) => item[method] !== undefined).map((method) => ({ method, path, op: asObject(item[method]) })));

/** A response as the operation gives it: a `$ref` to components.responses resolved (the answers of any route). */
const responseResolver =
  (components: Json) =>
  (response: unknown): Json => {
    const node = asObject(response);
    const ref = asString(node.$ref);
    return ref.startsWith('#/components/responses/') ? asObject(asObject(components.responses)[refName(ref.slice('#/components/responses/'.length))]) : node;
  };

const operationBlock = ({ method, path, op }: Operation, schemes: Json, resolve: (response: unknown) => Json): string[] => {
  const lines = [`### ${operationHeading(method, path)}`, ''];
  lines.push(`${prose(asString(op.summary))}.`.replace(/\.\.$/, '.'), '');
  if (typeof op.description === 'string') lines.push(prose(op.description), '');
  lines.push(`Authentication: ${authText(op.security, schemes)}.`, '');

  const parameters = asArray(op.parameters).map(asObject);
  if (parameters.length > 0) {
    lines.push('Parameters:', '', '| Name | In | Required | Type | Notes |', '|---|---|---|---|---|');
    for (const parameter of parameters) {
      const notes = [asString(parameter.description), ...rulesOf(parameter.schema)].filter((text) => text !== '').map(prose);
      lines.push(`| ${cell(code(asString(parameter.name)))} | ${asString(parameter.in)} | ${parameter.required === true ? 'yes' : 'no'} | ${cell(typeText(parameter.schema))} | ${cell(notes.join('; '))} |`);
    }
    lines.push('');
  }

  const body = asObject(op.requestBody);
  for (const [type, media] of Object.entries(asObject(body.content))) {
    const schema = asObject(media).schema;
    const { text, table } = bodyType(schema);
    lines.push(`Request body (${code(type)}, ${body.required === false ? 'optional' : 'required'}): ${text}.`, '');
    if (typeof body.description === 'string') lines.push(prose(body.description), '');
    if (table) lines.push(...schemaBlock(schema));
    else if (typeof asObject(schema).description === 'string') lines.push(prose(asString(asObject(schema).description)), '');
  }

  const responses = Object.entries(asObject(op.responses));
  const tables: string[] = [];
  lines.push('Responses:', '', '| Status | Meaning | Body |', '|---|---|---|');
  for (const [status, response] of responses) {
    const answer = resolve(response);
    const contents = Object.entries(asObject(answer.content));
    const bodies = contents.map(([type, media]) => {
      const schema = asObject(media).schema;
      const { text, table } = bodyType(schema);
      if (table) tables.push(`Response ${status} (${code(type)}):`, '', ...schemaBlock(schema));
      return type === 'application/json' ? text : `${code(type)}: ${text}`;
    });
    const headers = Object.entries(asObject(answer.headers)).map(([name, header]) => `header ${code(name)}: ${asString(asObject(header).description)}`);
    const meaning = [asString(answer.description), ...headers].map(prose).join('; ');
    lines.push(`| ${status} | ${cell(meaning)} | ${cell(bodies.join('; ') || 'none')} |`);
  }
  lines.push('', ...tables);
  return lines;
};

/** The whole reference. Throws when two headings would get one anchor (a link would go to the wrong one). */
export const apiMarkdown = (doc: OpenApiDocument): string => {
  const info = asObject(doc.info);
  const components = asObject(doc.components);
  const schemas = asObject(components.schemas);
  const schemes = asObject(components.securitySchemes);
  const tags = asArray(doc.tags).map(asObject);
  const operations = operationsOf(doc);
  const byTag = (tag: string): Operation[] => operations.filter(({ op }) => asString(asArray(op.tags)[0]) === tag);

  const headings = ['Contents', 'Authentication', ...tags.map((tag) => asString(tag.name)), ...operations.map(({ method, path }) => operationHeading(method, path)), 'Schemas', ...Object.keys(schemas).map(schemaHeading)];
  const anchors = new Map<string, string>();
  for (const heading of headings) {
    const anchor = anchorOf(heading);
    const other = anchors.get(anchor);
    if (other !== undefined) throw new Error(`The headings "${other}" and "${heading}" would share the anchor #${anchor}`);
    anchors.set(anchor, heading);
  }

  const lines: string[] = [
    `# ${asString(info.title)}: API reference`,
    '',
    '<!-- Generated by `npm run docs:api` (ops/docs/writeApiDocs.ts) from the service\'s OpenAPI document; do not edit. -->',
    '',
    `Version ${asString(info.version)}. Generated from the OpenAPI document the service serves at \`GET /api/v1/openapi.json\` (browsable at \`/api/v1/docs\`), which is built from the schemas the routes validate with: what is written here is what the service enforces. Regenerate with \`npm run docs:api\` after changing a route; a test fails while this file is not current.`,
    '',
    prose(asString(info.description)),
    '',
    ...(typeof asObject(doc['x-unrouted']).description === 'string' ? [`Requests no operation has: ${prose(asString(asObject(doc['x-unrouted']).description))}`, ''] : []),
    '## Contents',
    '',
    ...tags.flatMap((tag) => {
      const name = asString(tag.name);
      const listed = byTag(name).map(({ method, path }) => `[${method.toUpperCase()} ${path}](#${anchorOf(operationHeading(method, path))})`);
      return [`- [${name}](#${anchorOf(name)}): ${listed.join(', ')}`];
    }),
    `- [Schemas](#schemas): ${Object.keys(schemas).map(link).join(', ')}`,
    '',
    '## Authentication',
    '',
    '| Scheme | How it is sent | What it is |',
    '|---|---|---|',
    ...Object.entries(schemes).map(([name, scheme]) => {
      const node = asObject(scheme);
      const how = node.type === 'http' ? `header ${code(`Authorization: ${asString(node.scheme).replace(/^./, (first) => first.toUpperCase())} <token>`)}` : `${asString(node.in)} ${code(asString(node.name))}`;
      return `| ${code(name)} | ${cell(how)} | ${cell(prose(asString(node.description)))} |`;
    }),
    '',
  ];
  for (const tag of tags) {
    const name = asString(tag.name);
    lines.push(`## ${name}`, '');
    if (typeof tag.description === 'string' && tag.description !== '') lines.push(prose(tag.description), '');
    for (const operation of byTag(name)) lines.push(...operationBlock(operation, schemes, responseResolver(components)));
  }
  lines.push('## Schemas', '', 'The named schemas the operations refer to.', '');
  for (const [name, schema] of Object.entries(schemas)) lines.push(`### ${schemaHeading(name)}`, '', ...schemaBlock(schema));
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
};
