import type { ItemTypeDefinition } from '../types.ts';
import { datetime, defineType, nullableStr, obj, SIBLING_UNIQUE, stringEnum, type JsonSchema } from './common.ts';

/** Folder types: every folder.* of the spec 2.2 table plus folder.user. Only folder_metadata is type-specific. */

export const WORKFLOW_STATES = ['ACTIVE', 'PAUSE'] as const;
export const CRON_STATUSES = ['STARTED', 'RUNNING', 'STOP', 'STOPPED', 'ERROR'] as const;

const FOLDERS: ReadonlyArray<[type: string, description: string]> = [
  ['folder.account', 'Account folder; top of an account tree (projects, trash, users).'],
  ['folder.project', 'Project folder; folder_metadata holds the project cron status (spec 3.3).'],
  ['folder.trash', 'Trash folder of an account.'],
  ['folder.users', 'Folder of the per-user folders of an account.'],
  ['folder.user', 'Per-user folder; holds chat histories.'],
  ['folder.action', 'Folder of actions.'],
  ['folder.asset', 'Folder of assets: reports, tables, HTML reports, configs.'],
  ['folder.workflow', 'Workflow folder; holds tasks and their items. folder_metadata.state is ACTIVE or PAUSE.'],
  ['folder.operator', 'Folder of operators.'],
  ['folder.payload', 'Folder of payloads.'],
  ['folder.connection', 'Folder of connections.'],
  ['folder.bootstrap', 'Folder of bootstrap items.'],
  ['folder.config', 'Folder of configs.'],
  ['folder.ai', 'AI folder: chats and skills.'],
  ['folder.report', 'Folder of reports.'],
  ['folder.table', 'Folder of tables.'],
  ['folder.chat', 'Folder of AI chats.'],
  ['folder.skill', 'Folder of AI skills.'],
];

const folderMetadata = (type: string): JsonSchema => {
  if (type === 'folder.workflow') return { type: 'object', properties: { state: stringEnum(WORKFLOW_STATES) } };
  if (type === 'folder.project') {
    return {
      type: 'object',
      properties: {
        cron_status: stringEnum(CRON_STATUSES),
        latest_heartbeat: datetime(),
        start_date: datetime(),
        stop_date: datetime(),
        error: nullableStr(),
      },
    };
  }
  return obj();
};

export const folderTypes: ItemTypeDefinition[] = FOLDERS.map(([type, description]) =>
  defineType({
    type,
    base: 'folder',
    description,
    properties: { folder_metadata: folderMetadata(type) },
    uniqueFields: SIBLING_UNIQUE,
    // folder_metadata is not versioned: on projects it carries the cron heartbeat, rewritten every few seconds.
    versionedFields: [],
    defaults: { folder_metadata: type === 'folder.workflow' ? { state: 'ACTIVE' } : {} },
  }),
);
