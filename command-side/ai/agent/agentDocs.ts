import { detail, json, objectOf, type RouteDocs } from '../../../shared/http/routeDocs.ts';
import { agentSchema } from './agentRoutes.ts';

/** The OpenAPI docs of agentRoutes. */
export const agentDocs: RouteDocs = {
  tag: 'AI',
  auth: 'optional',
  guarded: true,
  schemas: { AgentRequest: agentSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/ai/agent',
      summary: 'One turn of the conversational agent',
      description: "The chat's AI module in a loop of up to 50 iterations, with the service's tools through MCP when enable_tools. Null optional fields count as absent.",
      body: { schema: agentSchema },
      responses: {
        200: json(
          'The reply',
          objectOf({
            message: { type: 'string' },
            tool_calls_made: { type: ['array', 'null'], items: { type: 'string' } },
            content_type: { type: 'string', enum: ['text', 'html', 'markdown'] },
          }),
        ),
        401: detail(
          'User not authenticated: no token or cookie was presented and the chat (or connection_laui) is not shared with everyone; or one was presented and is not valid; or PUBLIC_ROUTES_REQUIRE_AUTH=true and none was',
        ),
        403: detail('Access denied (the chat or connection is not visible to the caller)'),
        500: detail('Internal server error: <provider error, summarised: one line, at most 200 characters>, chat item not found, LLM credentials missing'),
      },
    },
  ],
};
