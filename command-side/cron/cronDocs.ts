import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';
import { nonStringAction } from './manageCron.ts';

/** The OpenAPI docs of cronRoutes (spec 4.5). */
export const cronDocs: RouteDocs = {
  tag: 'Cron',
  description: "A project's cron scheduler: it finds the project's tasks ready to run and dispatches them.",
  auth: 'bearer',
  schemas: { ManageCron: nonStringAction },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/cron/manage',
      summary: "Start or stop a project's cron",
      description: 'Needs OWN on the project. STOP answers once this process’s loop made its last pass.',
      body: { schema: nonStringAction },
      responses: {
        200: json(
          'Done',
          objectOf({ success: { type: 'boolean', const: true }, message: { type: 'string' }, project_laui: lauiSchema, action: { type: 'string', enum: ['START', 'STOP'] } }),
        ),
        400: detail('Invalid action: <value>'),
        403: detail('Access denied'),
        404: detail('Item not found'),
        409: detail('Cron is already running for this project'),
      },
    },
  ],
};
