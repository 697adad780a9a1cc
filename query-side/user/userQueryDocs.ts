import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';

const nullableLaui = { type: ['string', 'null'], pattern: lauiSchema.pattern } as const;

/** GET /user/me (spec 2.8). */
const profileSchema = objectOf({
  laui: lauiSchema,
  username: { type: 'string' },
  email: { type: 'string' },
  chat_agent_laui: nullableLaui,
  chat_connection_laui: nullableLaui,
  chat_agent_name: { type: ['string', 'null'] },
  must_change_password: { type: 'boolean' },
});

/** The OpenAPI docs of userQueryRoutes (spec 4.7). */
export const userQueryDocs: RouteDocs = {
  tag: 'User',
  auth: 'bearer',
  schemas: { UserProfile: profileSchema },
  routes: [
    { method: 'GET', path: '/api/v1/user/me', summary: "The caller's profile", responses: { 200: json('The profile', profileSchema) } },
    {
      method: 'GET',
      path: '/api/v1/user/marketplace_access_token/get',
      summary: "The caller's marketplace access token",
      responses: { 200: json('null when none is stored', objectOf({ marketplace_access_token: { type: ['string', 'null'] } })), 404: detail('User not found') },
    },
  ],
};
