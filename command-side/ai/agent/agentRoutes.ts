import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { AppContext, AppState } from '../../../shared/http/AppState.ts';
import { requestWrites } from '../../../shared/http/requestWrites.ts';
import { newSessionId, type Laui } from '../../../shared/ids.ts';
import { AiModuleError, type AiMessage, type AiModule } from '../../../shared/ports/AiModule.ts';
import type { AgentToolSession, OpenAgentTools } from '../../../shared/ports/AgentTools.ts';
import type { Logger } from '../../../shared/ports/Logger.ts';
import type { ReadModelProgress } from '../../../shared/read-store/ReadModelProgress.ts';
import { lauiSchema, requireObjectBody, validateRequest } from '../../../shared/validation/validateRequest.ts';
import type { CatalogDeps } from '../../catalog/catalogDeps.ts';
import { agentMessages } from './agentPrompt.ts';
import { parseContentType } from './contentTypeMarker.ts';
import { loadChat } from '../loadChat.ts';
import { recordChatHistory } from '../recordChatHistory.ts';
import { logAiCall, meteredModule, providerFailure } from '../aiCallLog.ts';
import { runAgentLoop } from './runAgentLoop.ts';

export const AGENT_PATH = '/api/v1/ai/agent';

export interface AgentRoutesDeps extends CatalogDeps {
  aiModule: AiModule;
  openTools: OpenAgentTools;
  logger: Logger;
  readModels: ReadModelProgress;
  readYourWritesTimeoutMs: number;
  /** publicRouteGuard: lets everyone through unless PUBLIC_ROUTES_REQUIRE_AUTH. */
  guard: Middleware<AppState>;
  /** Authenticates a caller who presented a token or the frontend_token cookie (optionalCaller). */
  identify: Middleware<AppState>;
}

interface AgentRequest {
  prompt: string;
  chat_laui: Laui;
  messages?: AiMessage[];
  connection_laui?: Laui;
  enable_tools: boolean;
  skill_content?: string;
}

export const agentSchema = {
  type: 'object',
  properties: {
    prompt: { type: 'string' },
    chat_laui: lauiSchema,
    messages: {
      type: 'array',
      items: {
        type: 'object',
        properties: { role: { type: 'string', enum: ['system', 'user', 'assistant', 'tool'] }, content: { type: 'string' }, name: { type: 'string' } },
        required: ['role', 'content'],
      },
    },
    connection_laui: lauiSchema,
    enable_tools: { type: 'boolean', default: true },
    skill_content: { type: 'string' },
  },
  required: ['prompt', 'chat_laui'],
} as const;

/** The spec's defaults are null: a null optional field is an absent one (a null prompt stays, and is refused). */
const withoutNullOptionals = (body: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(body).filter(([key, value]) => value !== null || key === 'prompt' || key === 'chat_laui'));

/** The chat_history name of an agent call: `Agent: ` and the prompt's first words. */
const historyName = (prompt: string): string => {
  const line = prompt.replace(/\s+/g, ' ').trim();
  return `Agent: ${line.length > 60 ? `${line.slice(0, 60)}…` : line || 'conversation'}`;
};

/** The access token the caller presented (Bearer first, as authenticate reads it), for the agent's MCP calls. */
const presentedToken = (ctx: AppContext): string | null =>
  /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1] ?? ctx.cookies.get('frontend_token') ?? null;

/**
 * POST /api/v1/ai/agent (spec 4.11): the chat's AI module in a tool loop of up to 50 iterations,
 * with the service's tools through MCP when enable_tools. Public (spec 5.1) behind the guard of
 * PUBLIC_ROUTES_REQUIRE_AUTH; a caller who presents a token is identified, must VIEW the chat
 * (403), gets tools acting as themselves and has the call recorded in their user folder; an
 * anonymous caller may use only a chat shared with everyone (401). Every call that reaches the
 * module is logged with its tokens (logAiCall); a failure's message is summarised (providerFailure).
 */
export const agentRoutes = (deps: AgentRoutesDeps): Router<AppState> => {
  const router = new Router<AppState>();
  const { metaFor } = requestWrites(deps);

  /** The tool session, or none: tools that cannot be listed (server down, token refused) leave the agent without tools, not failed. */
  const openTools = async (ctx: AppContext, sessionId: string): Promise<AgentToolSession | null> => {
    try {
      return await deps.openTools({ accessToken: ctx.state.principal ? presentedToken(ctx) : null });
    } catch (error) {
      deps.logger.log({
        level: 'warning',
        category: 'API',
        session_id: sessionId,
        message: `Agent: the MCP tools could not be listed, answering without tools: ${error instanceof Error ? error.message : String(error)}`,
      });
      return null;
    }
  };

  router.post(AGENT_PATH, deps.guard, deps.identify, async (ctx) => {
    const body = validateRequest<AgentRequest>(agentSchema, withoutNullOptionals(requireObjectBody(ctx.request.body)));
    const principal = ctx.state.principal ?? null;
    const chat = await loadChat(deps, principal, { chat_laui: body.chat_laui, connection_laui: body.connection_laui ?? null });
    const sessionId = newSessionId(deps.clock.now());
    // A caller who leaves stops the loop at its next module call.
    const abort = new AbortController();
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) abort.abort(new Error('the client closed the request'));
    });
    const tools = body.enable_tools ? await openTools(ctx, sessionId) : null;
    const earlier = body.messages ?? [];
    const metered = meteredModule(deps.aiModule);
    const call = { route: 'agent', caller: principal, chatLaui: chat.chat.laui, connectionLaui: chat.connectionLaui, sessionId, correlationId: ctx.state.correlationId, metered } as const;
    let result;
    try {
      result = await runAgentLoop({
        module: metered.module,
        codeblock: chat.codeblock,
        connection: chat.connection,
        sessionId,
        messages: agentMessages({ prompt: body.prompt, messages: earlier, skillContent: body.skill_content ?? null, withTools: tools !== null && tools.tools.length > 0 }),
        tools,
        signal: abort.signal,
      });
    } catch (error) {
      const failure = error instanceof AiModuleError ? providerFailure(error.message) : error;
      logAiCall(deps.logger, { ...call, outcome: { error: failure } });
      throw failure;
    } finally {
      await tools?.close().catch(() => undefined);
    }
    const { message, contentType } = parseContentType(result.reply);
    // The answer is the caller's whatever happens to its record: recordChatHistory logs a failed
    // record and does not throw; an anonymous call is not recorded.
    const messages: AiMessage[] = [...earlier, { role: 'user', content: body.prompt }, { role: 'assistant', content: message }];
    await recordChatHistory(
      deps,
      principal,
      {
        name: historyName(body.prompt),
        created_item_type: 'agent',
        ai_provider: null,
        connection_laui: chat.connectionLaui,
        connection_name: chat.connectionName,
        messages: messages.map((entry) => ({ role: entry.role, content: entry.content, ...(entry.name === undefined ? {} : { name: entry.name }) })),
        generated_content: { chat_laui: chat.chat.laui, tool_calls_made: result.toolCallsMade, content_type: contentType, iterations: result.iterations },
        chat_laui: chat.chat.laui,
        token_usage: metered.usage(),
      },
      metaFor(ctx, principal?.laui ?? null),
    );
    logAiCall(deps.logger, { ...call, outcome: { status: 200 } });
    ctx.body = { message, tool_calls_made: tools === null ? null : result.toolCallsMade, content_type: contentType };
  });

  return router;
};
