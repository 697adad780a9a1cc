import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { relationQuerySchema } from './routes.ts';

const roleMap = { type: 'object', additionalProperties: { type: 'string', const: 'true' }, description: 'User or group LAUI to "true"' } as const;

/** A group as groupView shows it (spec 2.7). */
export const groupSchema = objectOf(
  {
    laui: lauiSchema,
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    access: objectOf({ owners: roleMap, editors: roleMap, viewers: roleMap }),
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
  },
  ['description'],
);

/** GET /group/get/{group_laui}: a value that is no LAUI is a 404, as an unknown group. */
const groupPathSchema = { type: 'object', properties: { group_laui: lauiSchema }, required: ['group_laui'] };

/** The OpenAPI docs of groupQueryRoutes (spec 4.6). */
export const groupQueryDocs: RouteDocs = {
  tag: 'Group',
  auth: 'bearer',
  schemas: { Group: groupSchema },
  routes: [
    {
      method: 'GET',
      path: '/api/v1/group/get',
      summary: 'The groups in which the caller holds a relation',
      description: 'true_parent: groups the caller owns; false_parents: groups it edits or views without owning; all or the empty string: any role. Roles held through a group count.',
      params: { query: relationQuerySchema },
      responses: { 200: json('By name', { type: 'array', items: groupSchema }) },
    },
    {
      method: 'GET',
      path: '/api/v1/group/get/:group_laui',
      summary: 'One group',
      description: 'For its members (any role, directly or through a member group) and administrators; anyone else gets 404 Group not found, as for an unknown LAUI.',
      params: { path: groupPathSchema },
      responses: { 200: json('The group', groupSchema), 404: detail('Group not found'), 422: null },
    },
  ],
};
