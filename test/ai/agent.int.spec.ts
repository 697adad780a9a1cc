import { expect } from 'chai';
import type { AiInvocation, AiModule, AiReply } from '../../shared/ports/AiModule.ts';
import { AiModuleError } from '../../shared/ports/AiModule.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';
import type { Reply } from '../support/HttpClient.ts';

type AgentBody = { message: string; tool_calls_made: string[] | null; content_type: string };

/** The fake AI module: each test sets the script; every invocation is kept (a copy, as the module saw it). */
const fake = {
  script: (_invocation: AiInvocation, _index: number): AiReply | Promise<AiReply> => ({ content: 'hello', finish_reason: 'stop', tool_calls: [] }),
  invocations: [] as AiInvocation[],
};
const fakeModule: AiModule = {
  async invoke(invocation) {
    fake.invocations.push(structuredClone({ ...invocation, signal: undefined }));
    return fake.script(invocation, fake.invocations.length - 1);
  },
};
const reply = (content: string, toolCalls: AiReply['tool_calls'] = []): AiReply => ({ content, finish_reason: 'stop', tool_calls: toolCalls });

/** The principal every caller is: a chat shared with it answers callers without a token. */
const EVERYONE = '000000000000000000000000';

describe('POST /api/v1/ai/agent (the agent loop over the service\'s MCP tools)', () => {
  let svc: TestService;
  let alice: CatalogClient;
  let aliceToken: string;
  let bobToken: string;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let chat: string;
  let bareChat: string;
  let privateChat: string;
  let connection: string;

  const agent = (body: Record<string, unknown>, options: { token?: string; cookie?: string } = {}): Promise<Reply> =>
    svc.client().post('/api/v1/ai/agent', { json: body, ...(options.token ? { token: options.token } : {}), ...(options.cookie ? { headers: { cookie: options.cookie } } : {}) });

  before(async () => {
    svc = await startTestService({}, { aiModule: fakeModule });
    const admin = await svc.login();
    aliceToken = (await createUser(svc, admin.token, 'alice')).token;
    bobToken = (await createUser(svc, admin.token, 'bob')).token;
    alice = catalogClient(svc, aliceToken);
    tree = await alice.bootstrap('acme');
    const chats = await alice.createOk({ item_type: 'folder.chat', name: 'chats', parent_laui: tree.folders.ai });
    // Shared with everyone: the anonymous calls below may use it; Bob may not (a private chat).
    chat = await alice.createOk({
      item_type: 'chat',
      name: 'assistant',
      parent_laui: chats,
      connection: { api_key: 'sk-test-123', model: 'gpt-test', token_limit: 1000 },
      access_patch: { add: { viewers: { [EVERYONE]: 'true' } } },
    });
    privateChat = await alice.createOk({ item_type: 'chat', name: 'private', parent_laui: chats, connection: { api_key: 'sk-test-456', model: 'gpt-test' } });
    bareChat = await alice.createOk({ item_type: 'chat', name: 'bare', parent_laui: chats });
    connection = await alice.createOk({ item_type: 'connection', name: 'llm', parent_laui: tree.folders.connection, content: { api_key: 'sk-other', model: 'other' } });
  });
  after(async () => svc.stop());
  beforeEach(() => {
    fake.invocations = [];
    fake.script = () => reply('hello');
  });

  it('given an anonymous caller and a reply with a markdown marker, when the agent runs, then 200 with the marker removed, content_type markdown, no tools and the chat\'s credentials opened', async () => {
    fake.script = () => reply('**Hi** there\n[content_type:markdown]');
    const answer = await agent({ prompt: 'say hi', chat_laui: chat, messages: [{ role: 'user', content: 'earlier' }, { role: 'assistant', content: 'yes?' }] });
    expect(answer.status, answer.text).to.equal(200);
    expect(answer.json).to.deep.equal({ message: '**Hi** there', tool_calls_made: null, content_type: 'markdown' });
    const [invocation] = fake.invocations;
    expect(invocation?.connection).to.deep.equal({ api_key: 'sk-test-123', model: 'gpt-test', token_limit: 1000 });
    expect(invocation?.codeblock).to.equal(null);
    expect(invocation).to.not.have.property('tools');
    expect(invocation?.messages.map((message) => message.role)).to.deep.equal(['system', 'user', 'assistant', 'user']);
    expect(invocation?.messages.at(-1)).to.deep.equal({ role: 'user', content: 'say hi' });
    expect(invocation?.messages[0]?.content).to.include('[content_type:markdown]');
  });

  it('given skill_content, when the agent runs, then it opens the system prompt', async () => {
    await agent({ prompt: 'p', chat_laui: chat, skill_content: 'You are a SQL expert.' });
    expect(fake.invocations[0]?.messages[0]?.content).to.match(/^You are a SQL expert\.\n\n/);
  });

  it('given Alice\'s token and a module that calls tools (one good, bad JSON, unknown, refused), when the agent runs, then each runs through MCP as Alice, failures come back as tool content, and the loop answers', async () => {
    fake.script = (_invocation, index) =>
      index === 0
        ? reply('Looking.', [
            { name: 'catalog_get', arguments: { item_laui: tree.project_laui, parent_or_child: 'child', item_type: 'folder.payload' } },
            { name: 'catalog_get', arguments: '{"item_laui": ' },
            { name: 'format_disk', arguments: {} },
            { name: 'catalog_create', arguments: JSON.stringify({ item_type: 'payload', name: 'x', parent_laui: tree.folders.ai, content: {} }) },
          ])
        : reply('Your project has a payload folder. [content_type:text]');
    const answer = await agent({ prompt: 'what is in my project?', chat_laui: chat }, { token: aliceToken });
    expect(answer.status, answer.text).to.equal(200);
    expect(answer.json).to.deep.equal({
      message: 'Your project has a payload folder.',
      tool_calls_made: ['catalog_get', 'catalog_get', 'format_disk', 'catalog_create'],
      content_type: 'text',
    });
    expect(fake.invocations).to.have.length(2);
    expect(fake.invocations[0]?.tools?.map((tool) => tool.name)).to.include.members(['catalog_get', 'catalog_create', 'task_run', 'logs_query', 'query_execute']);
    const tools = (fake.invocations[1]?.messages ?? []).filter((message) => message.role === 'tool');
    expect(tools.map((message) => message.name)).to.deep.equal(['catalog_get', 'catalog_get', 'format_disk', 'catalog_create']);
    expect(tools[0]?.content).to.include(tree.folders.payload);
    expect(tools[1]?.content).to.match(/^Error: the arguments of catalog_get are not valid JSON/);
    expect(tools[2]?.content).to.match(/^Error: unknown tool "format_disk"/);
    // folder.ai does not take payloads: the route's own 422 detail comes back.
    expect(tools[3]?.content).to.match(/^Error 422: /);
  });

  it('given Bob\'s token and a tool call on Alice\'s items through Bob\'s own chat, when the agent runs, then the tool is refused with 403 as Bob, not run as anyone else', async () => {
    const bob = catalogClient(svc, bobToken);
    const bobTree = await bob.bootstrap('bobco');
    const bobChats = await bob.createOk({ item_type: 'folder.chat', name: 'chats', parent_laui: bobTree.folders.ai });
    const bobChat = await bob.createOk({ item_type: 'chat', name: 'mine', parent_laui: bobChats, connection: { api_key: 'sk-bob', model: 'm' } });
    fake.script = (_invocation, index) =>
      index === 0 ? reply('', [{ name: 'catalog_create', arguments: { item_type: 'payload', name: 'intruder', parent_laui: tree.folders.payload, content: {} } }]) : reply('could not');
    const answer = await agent({ prompt: 'write into acme', chat_laui: bobChat }, { token: bobToken });
    expect(answer.status, answer.text).to.equal(200);
    expect(fake.invocations[1]?.messages.at(-1)).to.deep.equal({ role: 'tool', name: 'catalog_create', content: 'Error 403: Access denied' });
  });

  it('given a module that always calls a tool, when the agent runs, then the module is called 50 times and the answer says the loop stopped', async function () {
    this.timeout(120_000);
    fake.script = () => reply('again', [{ name: 'catalog_get', arguments: { item_laui: tree.folders.payload } }]);
    const answer = await agent({ prompt: 'loop', chat_laui: chat }, { token: aliceToken });
    expect(answer.status, answer.text).to.equal(200);
    const body = answer.json as AgentBody;
    expect(fake.invocations).to.have.length(50);
    expect(body.tool_calls_made).to.have.length(49);
    expect(body.message).to.match(/^again\n\n\[The agent stopped after 50 iterations/);
  });

  it('given enable_tools false, when the agent runs with a token, then the module gets no tools and tool_calls_made is null', async () => {
    const answer = await agent({ prompt: 'p', chat_laui: chat, enable_tools: false }, { token: aliceToken });
    expect((answer.json as AgentBody).tool_calls_made).to.equal(null);
    expect(fake.invocations[0]).to.not.have.property('tools');
  });

  it('given Alice\'s calls, when she reads her user folder, then each call is a chat_history item with the spec 2.3 fields', async () => {
    fake.script = () => reply('recorded [content_type:html]');
    const answer = await agent({ prompt: 'remember me', chat_laui: chat, connection_laui: connection }, { token: aliceToken });
    expect(answer.status, answer.text).to.equal(200);
    const folders = await alice.search({ item_filter: { item_type: 'folder.user', is_root: true, name: 'alice' } });
    const folder = (folders.json as { items: Array<{ laui: string }> }).items;
    expect(folder).to.have.length(1);
    const histories = await alice.search({ item_filter: { item_type: 'chat_history', parent_laui: folder[0]?.laui }, pagination: { per_page: 100 } });
    const items = (histories.json as { items: Array<{ laui: string }> }).items;
    const last = (await alice.get({ item_laui: items.at(-1)?.laui ?? '' })).json as Record<string, unknown>;
    expect(last).to.include({ item_type: 'chat_history', created_item_type: 'agent', connection_laui: connection, connection_name: 'llm' });
    expect(last.messages).to.deep.equal([
      { role: 'user', content: 'remember me' },
      { role: 'assistant', content: 'recorded' },
    ]);
    expect(last.generated_content).to.deep.include({ chat_laui: chat, content_type: 'html', tool_calls_made: [] });
    expect(fake.invocations[0]?.connection).to.deep.equal({ api_key: 'sk-other', model: 'other' });
  });

  it('given Carol\'s first calls to /ai/agent and /ai/generate at once, when they are recorded, then both land in one user folder (one rule, one reservation)', async () => {
    const carol = (await createUser(svc, (await svc.login()).token, 'carol')).token;
    const carolClient = catalogClient(svc, carol);
    const carolTree = await carolClient.bootstrap('carol-co');
    const carolChats = await carolClient.createOk({ item_type: 'folder.chat', name: 'chats', parent_laui: carolTree.folders.ai });
    const carolChat = await carolClient.createOk({ item_type: 'chat', name: 'c', parent_laui: carolChats, connection: { api_key: 'sk-c', model: 'm' } });
    fake.script = () => reply('{"payload": {}}');
    const answers = await Promise.all([
      agent({ prompt: 'one', chat_laui: carolChat, enable_tools: false }, { token: carol }),
      agent({ prompt: 'two', chat_laui: carolChat, enable_tools: false }, { token: carol }),
      svc.client().post('/api/v1/ai/generate', { json: { prompt: 'three', chat_laui: carolChat, item_type: 'payload', ai_provider: 'openai' }, token: carol }),
    ]);
    for (const answer of answers) expect(answer.status, answer.text).to.be.oneOf([200, 206]);
    const folders = (await carolClient.search({ item_filter: { item_type: 'folder.user' } })).json as { items: Array<{ laui: string }> };
    expect(folders.items).to.have.length(1);
    const histories = await carolClient.search({ item_filter: { item_type: 'chat_history', parent_laui: folders.items[0]?.laui } });
    expect((histories.json as { items: unknown[] }).items).to.have.length(3);
  });

  it('given Bob\'s token or Bob\'s frontend_token cookie, when he runs the agent on Alice\'s chat, then 403 and the module is not called', async () => {
    expect((await agent({ prompt: 'p', chat_laui: privateChat }, { token: bobToken })).json).to.deep.equal({ detail: 'Access denied' });
    const cookie = await agent({ prompt: 'p', chat_laui: privateChat }, { cookie: `frontend_token=${bobToken}` });
    expect(cookie.status).to.equal(403);
    expect(fake.invocations).to.have.length(0);
  });

  it('given an invalid token, when the agent is called, then 401 rather than an anonymous run', async () => {
    const answer = await agent({ prompt: 'p', chat_laui: chat }, { token: 'garbage' });
    expect(answer.status).to.equal(401);
  });

  it('given a missing chat, a chat without credentials and a missing connection item, when the agent runs, then 500 saying which', async () => {
    const missing = await agent({ prompt: 'p', chat_laui: '65a0000000000000000000aa' }, { token: aliceToken });
    expect(missing.status).to.equal(500);
    expect(missing.json).to.deep.equal({ detail: 'Internal server error: chat item not found: 65a0000000000000000000aa' });
    const bare = await agent({ prompt: 'p', chat_laui: bareChat }, { token: aliceToken });
    expect(bare.status).to.equal(500);
    // One loader for /ai/generate and /ai/agent (loadChat): its wording of the missing credentials.
    expect(bare.json).to.deep.equal({ detail: `Internal server error: LLM credentials missing: chat ${bareChat} has no connection` });
    const noConnection = await agent({ prompt: 'p', chat_laui: chat, connection_laui: '65a0000000000000000000ab' }, { token: aliceToken });
    expect((noConnection.json as { detail: string }).detail).to.equal('Internal server error: connection item not found: 65a0000000000000000000ab');
  });

  it('given a provider failure, when the agent runs, then 500 Internal server error with the provider\'s message', async () => {
    fake.script = () => {
      throw new AiModuleError('provider', 'Error code: 429 - rate limited');
    };
    const answer = await agent({ prompt: 'p', chat_laui: chat }, { token: aliceToken });
    expect(answer.status).to.equal(500);
    expect(answer.json).to.deep.equal({ detail: 'Internal server error: Error code: 429 - rate limited' });
  });

  it('given a body without prompt or with a bad chat_laui, when posted, then 422 naming the field', async () => {
    const answer = await agent({ chat_laui: 'nope' });
    expect(answer.status).to.equal(422);
    const locs = (answer.json as { detail: Array<{ loc: unknown[] }> }).detail.map((entry) => entry.loc.join('.'));
    expect(locs).to.include.members(['body.prompt', 'body.chat_laui']);
  });
});

describe('POST /api/v1/ai/agent with PUBLIC_ROUTES_REQUIRE_AUTH', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ PUBLIC_ROUTES_REQUIRE_AUTH: 'true' }, { aiModule: fakeModule });
  });
  after(async () => svc.stop());

  it('given no token, when the agent is called, then 401 before anything is read', async () => {
    const answer = await svc.client().post('/api/v1/ai/agent', { json: { prompt: 'p', chat_laui: '65a0000000000000000000aa' } });
    expect(answer.status).to.equal(401);
    expect(answer.json).to.deep.equal({ detail: 'User not authenticated' });
  });
});

describe('POST /api/v1/ai/agent with MCP_SERVER_URL (tools from another MCP server)', () => {
  let remote: TestService;
  let local: TestService;
  let remoteTree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let localChat: string;
  before(async () => {
    // The other server: another instance of this service, whose token the setting carries.
    remote = await startTestService();
    const remoteAdmin = await remote.login();
    remoteTree = await catalogClient(remote, remoteAdmin.token).bootstrap('remote');
    local = await startTestService({ MCP_SERVER_URL: `${remote.service.url}/mcp`, MCP_SERVER_TOKEN: remoteAdmin.token }, { aiModule: fakeModule });
    const localAdmin = catalogClient(local, (await local.login()).token);
    const localTree = await localAdmin.bootstrap('local');
    const chats = await localAdmin.createOk({ item_type: 'folder.chat', name: 'chats', parent_laui: localTree.folders.ai });
    localChat = await localAdmin.createOk({ item_type: 'chat', name: 'c', parent_laui: chats, connection: { api_key: 'k', model: 'm' }, access_patch: { add: { viewers: { [EVERYONE]: 'true' } } } });
  });
  after(async () => {
    await local?.stop();
    await remote?.stop();
  });
  beforeEach(() => {
    fake.invocations = [];
  });

  it('given an anonymous caller, when the agent calls a tool, then it runs on the configured server with MCP_SERVER_TOKEN', async () => {
    fake.script = (_invocation, index) => (index === 0 ? reply('', [{ name: 'catalog_get', arguments: { item_laui: remoteTree.project_laui } }]) : reply('ok'));
    const answer = await local.client().post('/api/v1/ai/agent', { json: { prompt: 'p', chat_laui: localChat } });
    expect(answer.status, answer.text).to.equal(200);
    expect((answer.json as AgentBody).tool_calls_made).to.deep.equal(['catalog_get']);
    const result = fake.invocations[1]?.messages.at(-1);
    expect(result?.role).to.equal('tool');
    expect(JSON.parse(result?.content ?? '{}')).to.include({ laui: remoteTree.project_laui, name: 'main' });
  });
});
