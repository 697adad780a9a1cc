import type { ItemTypeInfo, JsonSchema } from './types.ts';

export type FieldKind = 'text' | 'textarea' | 'enum' | 'integer' | 'number' | 'boolean' | 'code' | 'json' | 'reference' | 'datetime';

export interface FieldSpec {
  key: string;
  kind: FieldKind;
  label: string;
  required: boolean;
  schema: JsonSchema;
  /** reference: the item types it may point at (a family: operator, connection...). */
  family?: string;
  options?: string[];
  pattern?: string;
}

/** Fields the form never shows: where the item sits and who may see it are not edited here. */
const HIDDEN = new Set(['item_type', 'parent_laui', 'is_root', 'access_patch', 'laui', 'pk', 'version']);

const REFERENCE_FAMILIES: Record<string, string> = {
  operator_laui: 'operator',
  connection_laui: 'connection',
  payload_laui: 'payload',
  project_laui: 'folder.project',
  account_laui: 'folder.account',
};
const REFERENCE_LABELS: Record<string, string> = { payload_laui: 'Payload item' };

const typesOf = (schema: JsonSchema): string[] => (Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]);

/** `max_parallelism` reads Max parallelism; a reference `operator_laui` reads Operator. */
const labelOf = (key: string): string =>
  REFERENCE_LABELS[key] ?? (key in REFERENCE_FAMILIES ? key.replace(/_laui$/, '') : key).replace(/_/g, ' ').replace(/^./, (first) => first.toUpperCase());

const kindOf = (key: string, schema: JsonSchema): Omit<FieldSpec, 'key' | 'label' | 'required' | 'schema'> => {
  const types = typesOf(schema);
  if (key in REFERENCE_FAMILIES && types.includes('string')) return { kind: 'reference', family: REFERENCE_FAMILIES[key] as string };
  if (key === 'description') return { kind: 'textarea' };
  if (schema.enum && schema.enum.every((value) => typeof value === 'string')) return { kind: 'enum', options: schema.enum as string[] };
  if (types.includes('object') && schema.properties && 'code' in schema.properties) return { kind: 'code' };
  if (types.includes('string') && schema.format === 'iso-datetime') return { kind: 'datetime' };
  if (types.includes('string')) return { kind: 'text', ...(schema.pattern ? { pattern: schema.pattern } : {}) };
  if (types.includes('integer')) return { kind: 'integer' };
  if (types.includes('number')) return { kind: 'number' };
  if (types.length === 1 && types[0] === 'boolean') return { kind: 'boolean' };
  return { kind: 'json' };
};

/**
 * What a user writes: the type's versioned fields (every revision records them) and its required
 * ones. The rest of a schema is the service's own bookkeeping (a task's state, run dates, session
 * ids...), shown on the item but not offered in a form; a workflow's folder_metadata (ACTIVE or
 * PAUSE) is the one unversioned field users set.
 */
const editable = (info: ItemTypeInfo, key: string): boolean =>
  info.versioned_fields.includes(key) || info.required.includes(key) || (key === 'folder_metadata' && info.item_type === 'folder.workflow');

/** The form of an item type, from its JSON Schema (GET /catalog/item-types/supported-types). */
export const fieldsOf = (info: ItemTypeInfo): FieldSpec[] => {
  const properties = info.schema.properties ?? {};
  const required = new Set([...(info.schema.required ?? []), ...info.required]);
  const keys = ['name', 'description', ...Object.keys(properties).filter((key) => key !== 'name' && key !== 'description')];
  return keys
    .filter((key) => !HIDDEN.has(key) && (key in properties || key === 'name') && editable(info, key))
    .map((key) => {
      const schema = properties[key] ?? { type: 'string' };
      const spec: FieldSpec = { key, label: labelOf(key), required: required.has(key), schema, ...kindOf(key, schema) };
      if (key === 'name' && info.name_pattern) spec.pattern = info.name_pattern;
      return spec;
    });
};

export interface CodeValue {
  language: string;
  code: string;
}

/** What an input holds: text for most fields, a boolean for checkboxes, language and text for code. */
export type FieldValue = string | boolean | CodeValue;

export const codeLanguages = (key: string): string[] => (key === 'bashblock' ? ['bash'] : ['python', 'javascript']);

/** An item's stored value as the form shows it. */
export const toInput = (field: FieldSpec, value: unknown): FieldValue => {
  switch (field.kind) {
    case 'boolean':
      return value === true;
    case 'code': {
      const block = (value ?? {}) as { language?: unknown; code?: unknown; content?: unknown };
      const code = typeof block.code === 'string' ? block.code : typeof block.content === 'string' ? block.content : '';
      return { language: typeof block.language === 'string' ? block.language : (codeLanguages(field.key)[0] as string), code };
    }
    case 'json':
      return value === undefined || value === null ? '' : JSON.stringify(value, null, 2);
    default:
      return value === undefined || value === null ? '' : String(value);
  }
};

export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The form's value as the API takes it; `undefined` leaves the field out of the request. */
export const fromInput = (field: FieldSpec, input: FieldValue): unknown => {
  if (field.kind === 'boolean') return input === true;
  if (field.kind === 'code') {
    const block = input as CodeValue;
    return block.code === '' ? undefined : { language: block.language, code: block.code };
  }
  const text = String(input);
  if (text.trim() === '') return undefined;
  switch (field.kind) {
    case 'integer': {
      if (!/^-?\d+$/.test(text.trim())) throw new FieldError(field.key, `${field.label} must be a whole number`);
      return Number(text);
    }
    case 'number': {
      const number = Number(text);
      if (!Number.isFinite(number)) throw new FieldError(field.key, `${field.label} must be a number`);
      return number;
    }
    case 'json':
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw new FieldError(field.key, `${field.label} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
      }
    default:
      return text;
  }
};

const same = (left: unknown, right: unknown): boolean => JSON.stringify(left) === JSON.stringify(right);

/**
 * The request fields of a form: every filled field for a create; for an update only the fields
 * that differ from the item, a cleared one sent as null.
 */
export const requestFields = (fields: FieldSpec[], values: Record<string, FieldValue>, original: Record<string, unknown> | null): Record<string, unknown> => {
  const body: Record<string, unknown> = {};
  for (const field of fields) {
    const value = fromInput(field, values[field.key] ?? toInput(field, undefined));
    if (original === null) {
      if (value !== undefined) body[field.key] = value;
      continue;
    }
    const before = original[field.key];
    if (value === undefined) {
      if (before !== undefined && before !== null && before !== '' && field.kind !== 'code') body[field.key] = null;
    } else if (!same(value, field.kind === 'code' ? { language: (before as CodeValue | undefined)?.language, code: (before as CodeValue | undefined)?.code } : before)) {
      body[field.key] = value;
    }
  }
  return body;
};
