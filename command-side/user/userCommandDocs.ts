import { detail, json, messageSchema, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { changePasswordSchema, createUserSchema, marketplaceTokenSchema, rolesSchema } from './routes.ts';

const adminOnly = detail('Access denied: administrators only');

/** The OpenAPI docs of userCommandRoutes (spec 4.7, plus the administrators' user management). */
export const userCommandDocs: RouteDocs = {
  tag: 'User',
  description: "The caller's profile, password and marketplace token; user management for administrators.",
  auth: 'bearer',
  schemas: { ChangePassword: changePasswordSchema, CreateUser: createUserSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/user/change-password',
      summary: "Change the caller's password",
      description: 'Required at first login when must_change_password is true. Failed attempts are limited per user (429).',
      body: { schema: changePasswordSchema },
      responses: {
        200: json('Changed', messageSchema),
        400: detail('Invalid argument: new_password must have at least <n> characters'),
        401: detail('User not authenticated (also a wrong current password)'),
        429: { ...detail('Too many failed password changes, try again later'), headers: { 'Retry-After': 'Seconds to wait' } },
      },
    },
    {
      method: 'POST',
      path: '/api/v1/user/marketplace_access_token/update',
      summary: "Store the caller's marketplace access token",
      body: { schema: marketplaceTokenSchema },
      responses: { 200: json('Stored (sealed)', objectOf({ message: { type: 'string' }, user_id: lauiSchema })) },
    },
    {
      method: 'POST',
      path: '/api/v1/user/create',
      summary: 'Create a user (administrators)',
      body: { schema: createUserSchema },
      responses: {
        200: json('Created', objectOf({ user_laui: lauiSchema })),
        400: detail('Invalid argument: <username or password rule>'),
        403: adminOnly,
        409: detail('User already exists'),
      },
    },
    {
      method: 'POST',
      path: '/api/v1/user/roles',
      summary: 'Grant or withdraw the auditor role (administrators)',
      description: 'Auditors read the event log (GET /api/v1/events).',
      body: { schema: rolesSchema },
      responses: { 200: json('Done', objectOf({ user_laui: lauiSchema, is_auditor: { type: 'boolean' } })), 403: adminOnly, 404: detail('User not found') },
    },
  ],
};
