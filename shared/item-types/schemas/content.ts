import type { ItemTypeDefinition } from '../types.ts';
import { ACTION_NAME_PATTERN, defineType, int, obj, SIBLING_UNIQUE, str, stringEnum } from './common.ts';

/** Content items: payloads, configs, tables, HTML reports, skills. */

export const CONFIG_TYPES = ['system', 'task', 'UIaction', 'taskAction', 'connection', 'workflow'] as const;

export const payloadType: ItemTypeDefinition = defineType({
  type: 'payload',
  base: 'payload',
  description: 'Payload item; its content replaces a task payload at execution time.',
  properties: { content: obj() },
  uniqueFields: SIBLING_UNIQUE,
  versionedFields: ['content'],
});

export const configType: ItemTypeDefinition = defineType({
  type: 'config',
  base: 'config',
  description: `Config item merged into tasks (parameters, overridable, not_overridable, total_retries, retry_interval). config_type: ${CONFIG_TYPES.join(', ')}.`,
  properties: { config_type: stringEnum(CONFIG_TYPES), content: obj() },
  uniqueFields: SIBLING_UNIQUE,
  versionedFields: ['config_type', 'content'],
});

export const tableType: ItemTypeDefinition = defineType({
  type: 'table',
  base: 'table',
  description: 'Data table asset: source, location, load strategy, schema definition, watermarks and lineage.',
  properties: {
    source_system: str(),
    location_uri: str(),
    status: str(),
    load_strategy: str(),
    row_count: int(0),
    quality_score: { type: 'number' },
    schema_definition: {
      type: 'object',
      properties: {
        columns: {
          type: 'array',
          items: {
            type: 'object',
            properties: { name: str(), type: str(), nullable: { type: 'boolean' } },
            required: ['name', 'type'],
          },
        },
      },
    },
    etl_watermarks: obj(),
    lineage_metadata: obj(),
  },
  uniqueFields: SIBLING_UNIQUE,
  // status, row_count, quality_score and etl_watermarks are load results, rewritten by every load.
  versionedFields: ['source_system', 'location_uri', 'load_strategy', 'schema_definition', 'lineage_metadata'],
});

export const htmlReportType: ItemTypeDefinition = defineType({
  type: 'html_report',
  base: 'html_report',
  description: 'HTML report asset; the spec states the `.action` name pattern for it.',
  namePattern: ACTION_NAME_PATTERN,
  properties: { html: str() },
  uniqueFields: SIBLING_UNIQUE,
  versionedFields: ['html'],
});

export const skillType: ItemTypeDefinition = defineType({
  type: 'skill',
  base: 'skill',
  description: 'AI skill: text prepended to the system prompt.',
  properties: { content: str() },
  uniqueFields: SIBLING_UNIQUE,
  versionedFields: ['content'],
});
