import { detail, empty, invalidOrDetail, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { deleteQuerySchema, saveGroupSchema } from './routes.ts';
import { accessPatchSchema } from './validateAccessPatch.ts';

/** The OpenAPI docs of groupCommandRoutes (spec 4.6). */
export const groupCommandDocs: RouteDocs = {
  tag: 'Group',
  description: 'Groups of users: a role in a group gives its roles on items.',
  auth: 'bearer',
  schemas: { SaveGroup: saveGroupSchema, AccessPatch: accessPatchSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/group/create',
      summary: 'Create a group, or update the one of that name',
      description: 'The creator owns a new group. A group of that name the caller edits or owns is updated instead. access_patch role maps: user or group LAUI to the string "true".',
      body: { schema: saveGroupSchema },
      responses: {
        200: empty('Saved (empty body)'),
        403: detail('Access denied'),
        422: invalidOrDetail('Invalid request: one entry per problem; or a sentence for a patch that would leave the group without an owner'),
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/group/delete',
      summary: 'Delete a group',
      description: 'Needs delete (own) on the group.',
      params: { query: deleteQuerySchema },
      responses: { 200: empty('Deleted (empty body)'), 403: detail('Access denied'), 404: detail('Group not found') },
    },
  ],
};
