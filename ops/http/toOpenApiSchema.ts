/**
 * One ajv schema (JSON Schema draft-07, as the routes validate with) as a schema of an OpenAPI 3.1
 * document (JSON Schema 2020-12). The input is never changed: the output is a new tree.
 *
 * - Objects the document names (components) become `$ref`s wherever they appear, the named object
 *   itself excepted where it is defined: a shared schema (an ObjectId, an error body) shows once.
 * - `$schema` and `$id` are dropped: the document has one dialect, and an `$id` would re-base the
 *   `$ref`s below it.
 * - `definitions` become `$defs`, and the local `$ref`s into them (`#/definitions/x`, `#/$defs/x`,
 *   `#`) are rebased on the schema's place in the document; a schema with local refs must have a
 *   place (be a named component).
 * - `nullable: true` (OpenAPI 3.0, which ajv also reads) becomes a `null` in `type`.
 * - Tuple `items: [...]` becomes `prefixItems`, and `additionalItems` becomes `items`.
 * - `dependencies` becomes `dependentRequired` (lists) and `dependentSchemas` (schemas).
 * Keywords are recognised by position: a property named `nullable` or `items` is a property.
 */

export interface SchemaContext {
  /** The `$ref` of an object the document names, if it does. */
  refOf(schema: object): string | undefined;
}

const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const SCHEMA_VALUES = new Set(['additionalProperties', 'propertyNames', 'contains', 'not', 'if', 'then', 'else', 'unevaluatedItems', 'unevaluatedProperties', 'items', 'additionalItems']);
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const DROPPED = new Set(['$schema', '$id', 'id', 'nullable']);

/** A JSON value copied (arrays and plain objects anew), for `enum`, `default`, `const`, examples. */
const copy = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(copy);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, copy(inner)]));
  return value;
};

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * `schema` for an OpenAPI 3.1 document. `place`: the JSON pointer (as a `$ref`) where the result
 * goes when it is a named component (`#/components/schemas/Name`), else null; local `$ref`s need it.
 */
export const toOpenApiSchema = (schema: unknown, context: SchemaContext, place: string | null = null): unknown => {
  const convert = (node: unknown, isRoot: boolean): unknown => {
    if (typeof node === 'boolean') return node;
    if (!isObject(node)) throw new Error(`Not a JSON Schema: ${JSON.stringify(node)}`);
    const ref = context.refOf(node);
    if (ref !== undefined && !(isRoot && ref === place)) return { $ref: ref };
    const result: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (DROPPED.has(key)) continue;
      if (key === '$ref') result.$ref = localRef(String(value));
      else if (SCHEMA_MAPS.has(key) && isObject(value)) {
        result[key === 'definitions' ? '$defs' : key] = Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, convert(inner, false)]));
      } else if (key === 'items' && Array.isArray(value)) result.prefixItems = value.map((inner) => convert(inner, false));
      else if (key === 'additionalItems') {
        // Draft-07 reads it only beside a tuple `items`; 2020-12's `items` is exactly that.
        if (Array.isArray(node.items)) result.items = convert(value, false);
      } else if (key === 'dependencies' && isObject(value)) {
        for (const [name, inner] of Object.entries(value)) {
          const target = Array.isArray(inner) ? 'dependentRequired' : 'dependentSchemas';
          const into = (result[target] ??= {}) as Record<string, unknown>;
          into[name] = Array.isArray(inner) ? copy(inner) : convert(inner, false);
        }
      } else if (SCHEMA_VALUES.has(key)) result[key] = convert(value, false);
      else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) result[key] = value.map((inner) => convert(inner, false));
      else result[key] = copy(value);
    }
    if (node.nullable === true && node.type !== undefined) result.type = nullableType(node.type);
    return result;
  };

  const localRef = (ref: string): string => {
    if (!ref.startsWith('#')) return ref;
    if (place === null) throw new Error(`A schema with the local $ref ${ref} must be a named component`);
    if (ref === '#' || ref === '#/') return place;
    return `${place}${ref.slice(1).replace(/^\/definitions\//, '/$defs/')}`;
  };

  return convert(schema, true);
};

/** `type` with `null` added (without a type, any value, null included, was allowed already). */
const nullableType = (type: unknown): unknown[] => {
  const types = Array.isArray(type) ? [...(type as unknown[])] : [type];
  return types.includes('null') ? types : [...types, 'null'];
};
