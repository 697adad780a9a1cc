import type { AccessMaps } from '../access/permissions.ts';
import type { Laui } from '../ids.ts';

/** The items read model: one flat document per live or soft-deleted item (hard-deleted ones leave). */
export interface ItemDoc {
  [field: string]: unknown;
  id: Laui;
  laui: Laui;
  item_type: string;
  name: string;
  parent_laui: Laui | null;
  is_root: boolean;
  access: AccessMaps;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  is_deleted: boolean;
  created_by: Laui | null;
  updated_by: Laui | null;
  version: number;
  pk: string;
  /** Log position of the creation: the creation order listings sort by (ties impossible). */
  created_seq: number;
}
