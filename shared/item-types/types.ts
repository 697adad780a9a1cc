/** Shapes shared by the item-type registry, its schema files and its validator. */

/** One catalog item type: its JSON Schema, required fields, name rule, unique key, versioned fields, defaults. */
export interface ItemTypeDefinition {
  /** Canonical item_type, e.g. `task`, `connection.postgresql`, or `operator.python` for a resolved subtype. */
  type: string;
  /** `folder`, `operator`, `connection`, or the type itself (`task`, `action`, ...). */
  base: string;
  description: string;
  /** Draft-07 object schema of a create body (top-level `required` included; dropped in update mode). */
  schema: Record<string, unknown>;
  required: string[];
  namePattern: string | null;
  /** Fields that together must be unique among live items of the same base; [] = no unique key. */
  uniqueFields: string[];
  /** A change to any of these fields creates a revision. */
  versionedFields: string[];
  /** Filled in on create for absent fields (see applyDefaults). */
  defaults: Record<string, unknown>;
}

/** How a field is expected to look, attached to each schema-validation entry of POST /catalog/create. */
export interface ExpectedFormat {
  /** Field path below `body`, dot-joined (`name`, `actions.pre_actions.0.laui`). */
  name: string;
  /** `string`, `integer`, `number`, `boolean`, `object`, `array`, `ObjectId`, `datetime`, `any`; null for a forbidden key. */
  datatype: string | null;
  required: boolean;
  regex: string | null;
}

/** One entry of the 422 list of POST /catalog/create (spec 4.3): pydantic-style plus expected_format. */
export interface CatalogValidationEntry {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  expected_format?: ExpectedFormat;
  ctx?: Record<string, unknown>;
  [extra: string]: unknown;
}
