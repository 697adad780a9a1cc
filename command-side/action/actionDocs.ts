import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { anyDetailSchema } from '../../shared/http/errorBodies.ts';
import { actionType } from '../../shared/item-types/schemas/operator.ts';
import { lauiSchema } from '../../shared/validation/validateRequest.ts';

/** POST /action/run of an existing action: item_type and item_laui, optionally a connection and variables. */
const runExistingSchema = {
  type: 'object',
  properties: {
    item_type: { type: 'string', const: 'action' },
    item_laui: lauiSchema,
    connection_laui: lauiSchema,
    action_variables: { type: 'object' },
  },
  required: ['item_type', 'item_laui'],
};

/** The OpenAPI docs of actionRoutes. */
export const actionDocs: RouteDocs = {
  tag: 'Action',
  description: 'Run action code stand-alone.',
  auth: 'bearer',
  schemas: { RunExistingAction: runExistingSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/action/run',
      summary: 'Run an existing action, or create one and run it',
      description:
        'With item_laui: that action (EDIT on it). Without: a new action through the catalog (name matching `.action`, parent_laui, project_laui, account_laui, codeblock, bashblock required). A connection needs VIEW. The run waits for the action’s result.',
      body: { schema: { anyOf: [runExistingSchema, actionType.schema] } },
      responses: {
        200: json('What the action’s run function returned', objectOf({ result: {} }), {
          'X-Session-Id': 'The log session of the run (GET /api/v1/logs/session/{session_id})',
          'X-Item-Laui': 'The action run',
        }),
        403: detail('Access denied'),
        404: detail('Item not found'),
        409: detail('Item already exists with the same unique key'),
        422: json('Only Action can be executed / Request item_type must be \'action\' (strings), {summary, validation_context} for a new action’s schema, or the list form', anyDetailSchema),
        500: detail('Internal server error: <message> (the action failed or timed out)'),
      },
    },
  ],
};
