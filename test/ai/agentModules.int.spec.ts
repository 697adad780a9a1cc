import { expect } from 'chai';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, type CatalogClient } from '../support/catalogFixture.ts';
import { OpenAiStub } from '../support/openAiStub.ts';

/**
 * The agent with the real AI modules (no fake): the built-in module against a local
 * OpenAI-compatible stub, and chat modules in Python and JavaScript, each asking for a tool that the
 * loop runs through the service's own MCP server as the caller, then answering with its result.
 */
const JS_MODULE = `
export function run(connection, messages, tools) {
  const result = messages.find((message) => message.role === 'tool');
  if (result) return { content: 'found: ' + result.content.slice(0, 200) + '\\n[content_type:text]', finish_reason: 'stop', tool_calls: [] };
  const names = (tools || []).map((tool) => tool.name);
  if (!names.includes('catalog_get')) return 'no tools';
  return { content: 'looking', finish_reason: 'tool_calls', tool_calls: [{ name: 'catalog_get', arguments: { item_laui: messages.at(-1).content } }] };
}
`;
const PY_MODULE = `
import json
def run(connection, messages, tools=None):
    results = [m for m in messages if m["role"] == "tool"]
    if results:
        return {"content": "py found: " + results[0]["content"][:200], "finish_reason": "stop", "tool_calls": []}
    if not tools:
        return "no tools"
    return {"content": "looking", "finish_reason": "tool_calls", "tool_calls": [{"name": "catalog_get", "arguments": json.dumps({"item_laui": messages[-1]["content"]})}]}
`;

describe('POST /api/v1/ai/agent with the real modules: built-in (OpenAI-compatible stub), Python and JavaScript', function () {
  this.timeout(90_000);
  let svc: TestService;
  let stub: OpenAiStub;
  let admin: CatalogClient;
  let token: string;
  let target: string;
  const chats: Record<string, string> = {};

  const agent = (chat: string, prompt: string) => svc.client().post('/api/v1/ai/agent', { json: { prompt, chat_laui: chat, enable_tools: true }, token });

  before(async () => {
    stub = await new OpenAiStub().start();
    svc = await startTestService();
    token = (await svc.login()).token;
    admin = catalogClient(svc, token);
    const tree = await admin.bootstrap('agent-co');
    const folder = await admin.createOk({ item_type: 'folder.chat', name: 'chats', parent_laui: tree.folders.ai });
    target = await admin.createOk({ item_type: 'payload', name: 'the-needle', parent_laui: tree.folders.payload, content: { rows: 3 } });
    chats.builtin = await admin.createOk({ item_type: 'chat', name: 'builtin', parent_laui: folder, connection: { api_key: 'sk-stub', model: 'stub-model', token_limit: 256, base_url: stub.url } });
    chats.javascript = await admin.createOk({ item_type: 'chat', name: 'js', parent_laui: folder, codeblock: { language: 'javascript', content: JS_MODULE }, connection: { api_key: 'sk-js', model: 'm' } });
    chats.python = await admin.createOk({ item_type: 'chat', name: 'py', parent_laui: folder, codeblock: { language: 'python', code: PY_MODULE }, connection: { api_key: 'sk-py', model: 'm' } });
  });
  after(async () => {
    await svc?.stop();
    await stub?.stop();
  });

  it('given the built-in module and a model that asks for catalog_get, when the agent runs, then the tool runs as the caller and its result goes back to the model as a tool message', async () => {
    stub.answer({ content: null, tool_calls: [{ name: 'catalog_get', arguments: JSON.stringify({ item_laui: target }) }] }, { content: 'It is the needle.' });
    const before = stub.requests.length;
    const reply = await agent(chats.builtin!, 'what is it?');
    expect(reply.status, reply.text).to.equal(200);
    expect(reply.json).to.deep.include({ message: 'It is the needle.', tool_calls_made: ['catalog_get'] });
    const [first, second] = stub.requests.slice(before);
    expect((first?.body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name)).to.include('catalog_get');
    const toolMessage = (second?.body.messages as Array<{ role: string; content: string; tool_call_id?: string }>).find((message) => message.role === 'tool');
    expect(toolMessage?.content).to.include('the-needle');
    expect(toolMessage?.tool_call_id).to.be.a('string');
  });

  for (const language of ['javascript', 'python'] as const) {
    it(`given a ${language} chat module that asks for catalog_get, when the agent runs, then the tool's result reaches the module and its answer is returned`, async () => {
      const reply = await agent(chats[language]!, target);
      expect(reply.status, reply.text).to.equal(200);
      const body = reply.json as { message: string; tool_calls_made: string[]; content_type: string };
      expect(body.tool_calls_made).to.deep.equal(['catalog_get']);
      expect(body.message).to.match(language === 'javascript' ? /^found: / : /^py found: /);
      expect(body.message).to.include('the-needle');
    });
  }
});
