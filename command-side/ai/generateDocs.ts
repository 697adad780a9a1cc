import { detail, json, objectOf, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { generateSchema } from './generateRequest.ts';

const entry = objectOf({ type: { type: 'string' }, message: { type: 'string' }, line: { type: ['integer', 'null'] }, function: { type: 'string' } }, ['line', 'function']);

/** AIResponse (spec 2.10; generate.ts). */
export const aiResponseSchema = objectOf({
  message: { type: 'string' },
  generated_content: {
    type: 'object',
    additionalProperties: objectOf({ completed: { type: 'boolean' }, content: { type: 'string' }, language: { type: 'string' } }),
    description: 'By field: codeblock, bashblock, payload, connection',
  },
  token_limit_exceeded: { type: 'boolean' },
  partial_generation: { type: 'boolean' },
  temp_file_path: { type: ['string', 'null'] },
  validation: {
    type: ['object', 'null'],
    properties: { valid: { type: 'boolean' }, errors: { type: 'array', items: entry }, warnings: { type: 'array', items: entry } },
    description: 'Operators and actions only: the codeblock’s syntax and required functions',
  },
});

const sessionHeader = { 'X-Session-Id': 'The generation session: send it back as session_id to go on; its log is GET /api/v1/logs/session/{session_id}' };

/** The OpenAPI docs of generateRoutes. */
export const generateDocs: RouteDocs = {
  tag: 'AI',
  description:
    "Generation and the conversational agent, run by a chat item's AI module with its LLM credentials. Public; a caller who presents a token acts as themselves (VIEW on the chat); a caller without one may use only a chat shared with everyone (viewer 000000000000000000000000). Every call is logged with its tokens. PUBLIC_ROUTES_REQUIRE_AUTH=true asks for a token.",
  auth: 'optional',
  guarded: true,
  schemas: { GenerateRequest: generateSchema, AIResponse: aiResponseSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/ai/generate',
      summary: 'Generate an operator, action, payload or chat module',
      body: { schema: generateSchema },
      responses: {
        200: json('Generated', aiResponseSchema, sessionHeader),
        206: json('Cut at the token or context limit: unfinished fields have completed false', aiResponseSchema, sessionHeader),
        401: detail(
          'User not authenticated: no token or cookie was presented and the chat (or connection_laui) is not shared with everyone; or one was presented and is not valid; or PUBLIC_ROUTES_REQUIRE_AUTH=true and none was',
        ),
        403: detail('Access denied (the chat or connection is not visible to the caller)'),
        500: detail('Internal server error: <provider error, summarised: one line, at most 200 characters>, chat item not found, LLM credentials missing'),
      },
    },
  ],
};
