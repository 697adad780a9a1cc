import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { importSchema } from './routes.ts';

/** The OpenAPI docs of marketplaceRoutes (spec 4.8). */
export const marketplaceDocs: RouteDocs = {
  tag: 'Marketplace',
  description: 'Import items from the external marketplace, with the token stored through POST /api/v1/user/marketplace_access_token/update.',
  auth: 'bearer',
  schemas: { MarketplaceImport: importSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/marketplace/import',
      summary: 'Import a marketplace item into a folder',
      description: 'operator, action, payload, config and connection items; created through the catalog pipeline (EDIT on the parent, schema, hierarchy).',
      body: { schema: importSchema },
      responses: {
        200: json('Imported', objectOf({ item_laui: lauiSchema, message: { type: 'string' } })),
        400: detail('No marketplace token stored'),
        401: detail('User not authenticated, or Invalid Marketplace access token'),
        403: detail('Access denied'),
        404: detail('Item not found in Marketplace, or the parent not found'),
        409: detail('Item already exists with the same unique key'),
        422: json('{summary, validation_context}: the item does not validate, or the list form of the body', { type: 'object', properties: { detail: { type: ['object', 'array'] } }, required: ['detail'] }),
        500: detail('Error connecting to Marketplace: <reason> / Error fetching item from Marketplace: <reason> / Internal server error: <message>'),
      },
    },
  ],
};
