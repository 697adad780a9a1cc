import { api } from '../api.ts';
import type { ItemTypeInfo } from './types.ts';

let loading: Promise<Map<string, ItemTypeInfo>> | null = null;

/** GET /catalog/item-types/supported-types, once per page load: the schemas the forms are built from. */
export const loadItemTypes = (): Promise<Map<string, ItemTypeInfo>> => {
  loading ??= api<{ types: ItemTypeInfo[] }>('/api/v1/catalog/item-types/supported-types').then(
    ({ types }) => new Map(types.map((type) => [type.item_type, type])),
    (error: unknown) => {
      loading = null;
      throw error;
    },
  );
  return loading;
};

/** The schema of a type; `operator.<subtype>` and unknown `connection.<kind>` share their family's. */
export const typeInfo = (types: Map<string, ItemTypeInfo>, itemType: string): ItemTypeInfo | undefined =>
  types.get(itemType) ?? types.get(itemType.split('.')[0] ?? itemType);
