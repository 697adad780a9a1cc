import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';

type ToolResult = { isError: boolean; text: string; json: unknown };

/** An MCP client (the SDK's Client over Streamable HTTP) of the service's /mcp, as one user. */
const mcpClient = async (svc: TestService, token: string) => {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', svc.service.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return {
    client,
    async call(name: string, args: Record<string, unknown>): Promise<ToolResult> {
      const result = await client.callTool({ name, arguments: args });
      const text = (result.content as Array<{ type: string; text: string }>).map((part) => part.text).join('\n');
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { isError: result.isError === true, text, json };
    },
  };
};

describe('the service as an MCP server at /mcp (Streamable HTTP, two users)', () => {
  let svc: TestService;
  let alice: CatalogClient;
  let aliceMcp: Awaited<ReturnType<typeof mcpClient>>;
  let bobMcp: Awaited<ReturnType<typeof mcpClient>>;
  let bobToken: string;
  let tree: Awaited<ReturnType<CatalogClient['bootstrap']>>;
  let payload: string;
  const unknown = '65a0000000000000000000aa';

  before(async () => {
    svc = await startTestService();
    const admin = await svc.login();
    const aliceUser = await createUser(svc, admin.token, 'alice');
    bobToken = (await createUser(svc, admin.token, 'bob')).token;
    alice = catalogClient(svc, aliceUser.token);
    tree = await alice.bootstrap('acme');
    payload = await alice.createOk({ item_type: 'payload', name: 'p1', parent_laui: tree.folders.payload, content: { n: 1 } });
    // Alice's MCP token as a browser gets it: GET /get-mcp-token with her frontend_token cookie.
    const { client: browser } = await svc.login('alice', 'password-123');
    const mcpToken = await browser.get('/api/v1/get-mcp-token');
    expect(mcpToken.status).to.equal(200);
    aliceMcp = await mcpClient(svc, (mcpToken.json as { access_token: string }).access_token);
    bobMcp = await mcpClient(svc, bobToken);
  });
  after(async () => {
    await aliceMcp?.client.close();
    await bobMcp?.client.close();
    await svc.stop();
  });

  it('given a client with the token of GET /get-mcp-token, when it lists the tools, then every service tool is there with a JSON Schema of its arguments', async () => {
    const { tools } = await aliceMcp.client.listTools();
    expect(tools.map((tool) => tool.name)).to.have.members([
      'catalog_get',
      'catalog_search',
      'catalog_create',
      'catalog_update',
      'task_run',
      'task_update_state',
      'task_diagnose',
      'logs_session_content',
      'logs_query',
      'query_execute',
    ]);
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).to.equal('object');
      expect(tool.description, tool.name).to.be.a('string').and.not.equal('');
    }
    expect(tools.find((tool) => tool.name === 'catalog_create')?.inputSchema.required).to.deep.equal(['item_type', 'name']);
  });

  it('given Alice and Bob, when each traverses from Alice\'s project with catalog_get, then Alice gets the children and Bob a 403 tool error', async () => {
    const mine = await aliceMcp.call('catalog_get', { item_laui: tree.project_laui, parent_or_child: 'child', item_type: 'folder.payload' });
    expect(mine.isError, mine.text).to.equal(false);
    expect(JSON.stringify(mine.json)).to.include(tree.folders.payload);
    const theirs = await bobMcp.call('catalog_get', { item_laui: tree.project_laui, parent_or_child: 'child', item_type: 'folder.payload' });
    expect(theirs).to.include({ isError: true, text: 'Error 403: Access denied' });
  });

  it('given an item that does not exist, when fetched with catalog_get, then a 404 tool error with the route detail', async () => {
    const reply = await aliceMcp.call('catalog_get', { item_laui: unknown });
    expect(reply).to.include({ isError: true, text: `Error 404: Item not found with laui: ${unknown}` });
  });

  it('given a parent Bob cannot EDIT, when Bob creates under it with catalog_create, then 403; Alice creates there and gets the item_laui', async () => {
    const refused = await bobMcp.call('catalog_create', { item_type: 'payload', name: 'intruder', parent_laui: tree.folders.payload, content: {} });
    expect(refused).to.include({ isError: true, text: 'Error 403: Access denied' });
    const created = await aliceMcp.call('catalog_create', { item_type: 'payload', name: 'p2', parent_laui: tree.folders.payload, content: { n: 2 } });
    expect(created.isError, created.text).to.equal(false);
    const laui = (created.json as { item_laui: string }).item_laui;
    const read = await alice.get({ item_laui: laui });
    expect(read.json).to.include({ name: 'p2', parent_laui: tree.folders.payload });
  });

  it('given Alice\'s payload, when Bob and then Alice change it with catalog_update, then Bob gets 403 and Alice\'s change is read back', async () => {
    expect(await bobMcp.call('catalog_update', { item_laui: payload, content: { n: 666 } })).to.include({ isError: true, text: 'Error 403: Access denied' });
    const changed = await aliceMcp.call('catalog_update', { item_laui: payload, content: { n: 10 } });
    expect(changed.isError, changed.text).to.equal(false);
    expect((await alice.get({ item_laui: payload })).json).to.deep.include({ content: { n: 10 } });
  });

  it('given item filters, when Alice searches with catalog_search, then her payloads come back by name', async () => {
    const found = await aliceMcp.call('catalog_search', { item_filter: { item_type: 'payload', parent_laui: tree.folders.payload, name: 'p1' } });
    expect(found.isError, found.text).to.equal(false);
    expect((found.json as { items: Array<{ laui: string }> }).items.map((item) => item.laui)).to.deep.equal([payload]);
  });

  it('given tasks that do not exist, when task_diagnose, task_update_state and task_run are called, then each is a tool error with the route status', async () => {
    expect((await aliceMcp.call('task_diagnose', { task_laui: unknown })).text).to.match(/^Error 404: /);
    expect((await aliceMcp.call('task_update_state', { task_laui: unknown, state: 'success' })).text).to.match(/^Error 404: /);
    expect((await aliceMcp.call('task_run', { item_laui: unknown })).text).to.equal('Error 404: Item not found');
  });

  it('given arguments that do not fit the schema, when called, then a tool error naming the field', async () => {
    const missing = await aliceMcp.call('task_diagnose', {});
    expect(missing.isError).to.equal(true);
    expect(missing.text).to.match(/^Error: invalid arguments for task_diagnose: .*task_laui/);
    const badLaui = await aliceMcp.call('catalog_update', { item_laui: '../../user/create' });
    expect(badLaui.text).to.include('Invalid ObjectId');
  });

  it('given a tool the server does not have, when called, then a tool error listing the tools (not a protocol error)', async () => {
    const reply = await aliceMcp.call('drop_everything', {});
    expect(reply.isError).to.equal(true);
    expect(reply.text).to.match(/^Error: unknown tool "drop_everything"; the tools are catalog_get, /);
  });

  it('given the logs tools, when a bad SQL query and an unknown session are read, then the query is a tool error and the session an empty page', async () => {
    const query = await aliceMcp.call('logs_query', { sql: 'DELETE FROM logs', category: 'API' });
    expect(query.isError).to.equal(true);
    expect(query.text).to.match(/^Error: /);
    const session = await aliceMcp.call('logs_session_content', { session_id: '65a0000000000000000000ab' });
    expect(session.isError, session.text).to.equal(false);
    expect(session.json).to.deep.include({ items: [] });
  });

  it('given a connection Bob cannot see, when Bob runs query_execute on it, then a 404 tool error', async () => {
    const reply = await bobMcp.call('query_execute', { connection_laui: unknown, sql: 'SELECT 1' });
    expect(reply.isError).to.equal(true);
    expect(reply.text).to.match(/^Error 404: /);
  });

  it('given no token, an invalid one, a GET and a body that is not JSON, when /mcp is called, then 401, 401, 405 and a JSON-RPC parse error', async () => {
    const http = svc.client();
    const initialize = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    const headers = { accept: 'application/json, text/event-stream' };
    expect((await http.post('/mcp', { json: initialize, headers })).status).to.equal(401);
    expect((await http.post('/mcp', { json: initialize, headers, token: 'not-a-token' })).status).to.equal(401);
    const get = await http.get('/mcp', { headers: { accept: 'text/event-stream' }, token: bobToken });
    expect(get.status).to.equal(405);
    const broken = await http.post('/mcp', { body: '{"jsonrpc":', headers: { ...headers, 'content-type': 'application/json' }, token: bobToken });
    expect(broken.status).to.equal(400);
    expect((broken.json as { error: { code: number } }).error.code).to.equal(-32700);
  });

  it('given every failure above, when the tools are listed again, then the server still answers', async () => {
    expect((await bobMcp.client.listTools()).tools).to.have.length(10);
  });
});
