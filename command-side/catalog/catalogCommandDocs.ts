import { detail, json, messageSchema, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { anyDetailSchema } from '../../shared/http/errorBodies.ts';
import { HIERARCHY, listItemTypes } from '../../shared/item-types/itemTypes.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { bootstrapSchema, deleteSchema, linkSchema, restorePathSchema, restoreRevisionSchema, updateSchema } from './routes.ts';

/** Every registered item type's create schema, as the catalog validates with (shared/item-types). */
export const itemTypeSchemas: Readonly<Record<string, object>> = Object.fromEntries(listItemTypes().map((definition) => [`Item.${definition.type}`, definition.schema]));

/**
 * A create body: the fields of its item_type's schema as top-level keys. Aliases (connection.postgres)
 * and open subtypes (operator.<x>, connection.<x>) use their family's schema.
 */
const createBodySchema = {
  description: "The item's fields as top-level keys, validated against the schema of its item_type (GET /api/v1/catalog/item-types/supported-types)",
  type: 'object',
  properties: { item_type: { type: 'string' } },
  required: ['item_type'],
  anyOf: listItemTypes().map((definition) => definition.schema),
};

/** POST /catalog/update: the item and the fields to change (its type's fields; item_type, parent_laui and the service's fields cannot change). */
const updateBodySchema = { ...updateSchema, additionalProperties: true, description: 'Any of the item type’s fields besides these; access_patch needs OWN' };

const created = objectOf({ item_laui: lauiSchema });
const invalidItem = json(
  'The list form (each entry with expected_format), or an object: {message, item_type_passed, allowed_item_types} for a type the parent does not allow, {summary, validation_context}; ' +
    "for a task whose schedule could never run, POST /task/run's string: `invalid cron expression: <frequency>`, `start_date and end_date required for scheduled tasks` or `end_date must be greater than or equal to start_date`",
  anyDetailSchema,
);
/** The rule on system configs, named by every route that writes an item (docs/decisions.md). */
const SYSTEM_CONFIGS = ' A config of config_type system is created, changed, deleted or restored by administrators only (403 otherwise).';

const common = {
  400: detail('Invalid argument: <description>'),
  403: detail('Access denied'),
  404: detail('Item not found with laui: <laui>'),
  503: detail('write_conflict'),
};

/** The OpenAPI docs of catalogCommandRoutes (spec 4.3). */
export const catalogCommandDocs: RouteDocs = {
  tag: 'Catalog',
  description: [
    'The catalog of items: create, link, change, delete, restore, read and search.',
    '',
    // From the table the catalog enforces (shared/item-types/hierarchy.ts).
    'An item is created under a parent whose type allows its type (`operator.<x>` and `connection.<x>` count as operator and connection; other parents allow nothing):',
    '',
    '| Parent type | Child types |',
    '|---|---|',
    ...Object.entries(HIERARCHY).map(([parent, children]) => `| ${parent} | ${children.join(', ')} |`),
  ].join('\n'),
  auth: 'bearer',
  schemas: { ...itemTypeSchemas, ItemCreate: createBodySchema, Link: linkSchema, Delete: deleteSchema, RestoreRevision: restoreRevisionSchema, Bootstrap: bootstrapSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/catalog/create',
      summary: 'Create an item',
      description: 'parent_laui is required unless is_root is true (then it is forbidden). Needs EDIT on the parent and VIEW on the project_laui and account_laui the body names (any item type); the creator owns the item unless access_patch says otherwise. access_patch may make 000000000000000000000000 (everyone) a viewer, nothing else.' + SYSTEM_CONFIGS,
      body: { schema: createBodySchema },
      responses: { 200: json('Created', created), ...common, 409: detail('Item already exists with the same unique key'), 422: invalidItem },
    },
    {
      method: 'POST',
      path: '/api/v1/catalog/validate',
      summary: 'Check a create body without creating anything',
      description: 'The checks of POST /catalog/create, with the same answers, up to the write.',
      body: { schema: createBodySchema },
      responses: {
        200: json('It would be created', objectOf({ valid: { type: 'boolean', const: true }, item_type: { type: 'string' }, fields: { type: 'object' } })),
        ...common,
        409: detail('Item already exists with the same unique key'),
        422: invalidItem,
      },
    },
    {
      method: 'POST',
      path: '/api/v1/catalog/create/link',
      summary: 'Link two items',
      description: 'Needs EDIT on the parent and VIEW on the child.',
      body: { schema: linkSchema },
      responses: { 200: json('Linked', objectOf({ link_laui: lauiSchema })), ...common },
    },
    {
      method: 'POST',
      path: '/api/v1/catalog/delete',
      summary: 'Delete an item (soft unless hard_delete)',
      description: 'Needs DELETE on the item. parent_laui also removes the link.' + SYSTEM_CONFIGS,
      body: { schema: deleteSchema },
      responses: { 200: json('Deleted', messageSchema), ...common },
    },
    {
      method: 'POST',
      path: '/api/v1/catalog/restore/:item_laui',
      summary: 'Restore a soft-deleted item',
      description: 'Needs DELETE on the item.' + SYSTEM_CONFIGS,
      params: { path: restorePathSchema },
      responses: { 200: json('Restored', messageSchema), ...common },
    },
    {
      method: 'POST',
      path: '/api/v1/catalog/update',
      summary: "Change an item's fields",
      description: 'EDIT on the item (OWN for access_patch); changing project_laui or account_laui needs VIEW on the new one. The whole resulting item is validated against its schema. expected_version makes it conditional (409 when the item moved on).' + SYSTEM_CONFIGS,
      body: { schema: updateBodySchema },
      responses: {
        200: json('Updated', objectOf({ item_laui: lauiSchema, version: { type: ['integer', 'null'] } })),
        ...common,
        409: detail('The item changed since expected_version, or its new unique key is taken'),
        422: invalidItem,
      },
    },
    {
      method: 'POST',
      path: '/api/v1/catalog/restore_revision',
      summary: 'Make an earlier revision current again',
      description:
        'EDIT on the item. A new revision (version + 1, event ItemRevisionRestored naming the revision restored) whose versioned fields equal those of revision_laui ' +
        '(a LAUI of GET /catalog/get/item_revisions); the item\'s identity, parent, project, account, access and runtime fields are unchanged, and credentials are copied sealed as stored. ' +
        'expected_version is the item\'s current version (409 when it moved on). The restored item is checked as an update is (422).' +
        SYSTEM_CONFIGS,
      body: { schema: restoreRevisionSchema },
      responses: {
        200: json('Restored', objectOf({ item_laui: lauiSchema, version: { type: 'integer' }, restored_revision_laui: lauiSchema })),
        ...common,
        404: detail('Item not found with laui: <laui>, or Revision not found (no revision of this item has that LAUI)'),
        409: detail('Item version conflict: expected version <n>, current version <m>; or the restored unique key is taken'),
        422: invalidItem,
      },
    },
    {
      method: 'POST',
      path: '/api/v1/catalog/bootstrap',
      summary: "Create an account's standard tree",
      description: 'The account root, its trash and users folders, a project and its standard folders. Idempotent: what exists is reused.',
      body: { schema: bootstrapSchema },
      responses: {
        200: json(
          'The tree',
          objectOf({
            account_laui: lauiSchema,
            project_laui: lauiSchema,
            folders: { type: 'object', additionalProperties: lauiSchema },
            created: { type: 'array', items: lauiSchema },
          }),
        ),
        ...common,
        409: detail('Item already exists with the same unique key (an account of that name that is not yours)'),
      },
    },
  ],
};
