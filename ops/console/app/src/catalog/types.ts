import type { ItemTypeDocumentEntry } from '../../../../../shared/item-types/itemTypes.ts';

/** Catalog shapes as the REST API returns them (spec 2.1-2.4; fields beyond these are kept as they come). */
export interface Item {
  laui: string;
  item_type: string;
  name: string;
  description?: string | null;
  parent_laui: string | null;
  is_root?: boolean;
  is_deleted?: boolean;
  deleted_at?: string | null;
  version?: number;
  created_at?: string;
  updated_at?: string;
  [field: string]: unknown;
}

export interface Page<T> {
  items: T[];
  pagination: { current_page: number; per_page: number; has_next: boolean; next_page_token: string | null };
}

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minimum?: number;
  minLength?: number;
  additionalProperties?: boolean | JsonSchema;
}

/** One entry of GET /catalog/item-types/supported-types, as the service defines it, its schema read as JSON Schema. */
export type ItemTypeInfo = Omit<ItemTypeDocumentEntry, 'schema'> & { schema: JsonSchema };

export const isFolder = (itemType: string): boolean => itemType.startsWith('folder.');
export const baseOf = (itemType: string): string => itemType.split('.')[0] ?? itemType;
