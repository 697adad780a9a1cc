import type { ItemTypeDefinition } from '../types.ts';
import {
  ACTION_NAME_PATTERN,
  codeBlock,
  defineType,
  nullableObjectId,
  obj,
  objectId,
  OPERATOR_NAME_PATTERN,
  SIBLING_UNIQUE,
} from './common.ts';

/** Executable code items: operators (run by tasks) and actions (stand-alone or task lifecycle hooks). */

export const operatorType: ItemTypeDefinition = defineType({
  type: 'operator',
  base: 'operator',
  description:
    'Operator executed by tasks: codeblock (language, code), bashblock, sample connection and payload. ' +
    'Subtypes operator.<subtype> (e.g. operator.python) share this schema; the subtype is matched against the connection subtype.',
  namePattern: OPERATOR_NAME_PATTERN,
  properties: { codeblock: codeBlock(), bashblock: codeBlock(), connection: obj(), payload: obj() },
  uniqueFields: SIBLING_UNIQUE,
  versionedFields: ['codeblock', 'bashblock', 'connection', 'payload'],
});

export const actionType: ItemTypeDefinition = defineType({
  type: 'action',
  base: 'action',
  description: 'Executable action: codeblock, bashblock, project_laui, account_laui. Runs stand-alone or as a task hook.',
  namePattern: ACTION_NAME_PATTERN,
  properties: {
    codeblock: codeBlock(),
    bashblock: codeBlock(),
    project_laui: objectId(),
    account_laui: objectId(),
    connection_laui: nullableObjectId(),
    action_variables: obj(),
  },
  uniqueFields: SIBLING_UNIQUE,
  versionedFields: ['codeblock', 'bashblock', 'project_laui', 'account_laui', 'connection_laui', 'action_variables'],
});
