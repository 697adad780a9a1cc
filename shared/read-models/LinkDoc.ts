import type { Laui } from '../ids.ts';

/** Parent-child links: true-parent links come with ItemCreated, soft links from link streams. */
export interface LinkDoc {
  [field: string]: unknown;
  id: Laui;
  link_laui: Laui;
  parent_laui: Laui;
  child_laui: Laui;
  parent_type: string;
  child_type: string;
  true_parent: boolean;
  created_at: string;
  created_by: Laui | null;
  created_seq: number;
}
