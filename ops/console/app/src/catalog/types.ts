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

export interface ItemTypeInfo {
  item_type: string;
  base: string;
  description: string;
  required: string[];
  name_pattern: string | null;
  unique_fields: string[];
  versioned_fields: string[];
  allowed_children: string[];
  schema: JsonSchema;
}

export const isFolder = (itemType: string): boolean => itemType.startsWith('folder.');
export const baseOf = (itemType: string): string => itemType.split('.')[0] ?? itemType;
