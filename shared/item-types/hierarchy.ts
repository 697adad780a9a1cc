import { canonicalItemType, hierarchyKey } from './definitions.ts';

/**
 * Parent type -> allowed child types: the "key mappings" table of spec 2.2, plus folder.user -> chat_history.
 * operator.* and connection.* count as operator / connection on both sides; parents not listed allow nothing.
 */
export const HIERARCHY: Readonly<Record<string, readonly string[]>> = {
  'folder.account': ['folder.project', 'folder.trash', 'folder.users'],
  'folder.project': [
    'folder.action',
    'folder.asset',
    'folder.workflow',
    'folder.operator',
    'folder.payload',
    'folder.connection',
    'folder.bootstrap',
    'folder.config',
    'folder.ai',
  ],
  'folder.workflow': ['folder.workflow', 'task', 'config', 'connection', 'payload', 'operator', 'action'],
  'folder.operator': ['folder.operator', 'operator'],
  'folder.connection': ['folder.connection', 'connection'],
  'folder.payload': ['folder.payload', 'payload'],
  'folder.config': ['folder.config', 'config'],
  'folder.asset': ['folder.asset', 'folder.report', 'folder.table', 'html_report', 'table', 'config'],
  'folder.ai': ['folder.ai', 'folder.chat', 'folder.skill'],
  'folder.chat': ['folder.chat', 'chat'],
  'folder.skill': ['folder.skill', 'skill'],
  // Not in the spec's key mappings (docs/decisions.md): a user's folder lives in its account's users
  // folder, and a project's action folder holds actions (otherwise only workflows could).
  'folder.action': ['folder.action', 'action'],
  'folder.users': ['folder.user'],
  'folder.user': ['chat_history'],
};

const childrenOf = (parentType: string): readonly string[] => {
  const canonical = canonicalItemType(parentType);
  if (canonical === null) return [];
  const key = hierarchyKey(canonical);
  return Object.hasOwn(HIERARCHY, key) ? (HIERARCHY[key] ?? []) : [];
};

export function allowedChildren(parentType: string): string[] {
  return [...childrenOf(parentType)];
}

export function isChildAllowed(parentType: string, childType: string): boolean {
  const child = canonicalItemType(childType);
  if (child === null) return false;
  return childrenOf(parentType).includes(hierarchyKey(child));
}
