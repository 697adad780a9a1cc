import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { readSessionLog } from '../../ops/logging/sessionLogFile.ts';
import { newLaui } from '../../shared/ids.ts';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';
import type { Reply } from '../support/HttpClient.ts';
import { OpenAiStub } from '../support/openAiStub.ts';

/** A scripted AI module: the prompt is a JSON spec of what to answer (a reply, a finish_reason, an exception). */
const PY_MODULE = `
import json

def run(connection, messages, tools=None):
    spec = json.loads(messages[-1]["content"])
    print("python module got", len(messages), "messages, key", connection.get("api_key"))
    if "raise" in spec:
        raise ValueError(spec["raise"])
    if spec.get("show_system"):
        return json.dumps({"message": messages[0]["content"], "earlier": messages[1:-1]})
    if "finish_reason" in spec:
        return {"content": spec["reply"], "finish_reason": spec["finish_reason"], "tool_calls": []}
    return spec["reply"]
`;

const JS_MODULE = `
export async function run(connection, messages, tools) {
  const spec = JSON.parse(messages[messages.length - 1].content);
  console.log('javascript module got', messages.length, 'messages');
  if (spec.raise) throw new Error(spec.raise);
  if (spec.finish_reason) return { content: spec.reply, finish_reason: spec.finish_reason, tool_calls: [] };
  return spec.reply;
}
`;

const VALID_OPERATOR = `def initialize(connection, payload, context):
    pass

def run(connection, payload, context):
    print(payload["table"])

def check_completion(connection, payload, context):
    return {"status": "success"}

def finish(connection, payload, context):
    pass
`;

/** A syntax error on line 4 and no finish. */
const INVALID_OPERATOR = `def initialize(connection, payload, context):
    pass

def run(connection, payload, context:
    print(payload)

def check_completion(connection, payload, context):
    return {"status": "success"}
`;

const CJS_ACTION = `module.exports = {
  async run(connection, actionVariables, context) {
    return { ok: true };
  },
};
`;

/** An ES module with a syntax error (Node 20's plain \`node --check\` would pass it). */
const BROKEN_ESM_ACTION = `export function run(connection, actionVariables, context) {
  return { ok: 1 ;
}
`;

const operatorFields = (code: string) => ({
  codeblock: { language: 'python', content: code },
  bashblock: { language: 'bash', content: '' },
  payload: { table: 'sales', day: '{{ds}}' },
  connection: { host: 'db.example', password: '<password>' },
});

const fenced = (value: unknown) => `Here it is.\n\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\``;

interface AIResponseBody {
  message: string;
  generated_content: Record<string, { completed: boolean; content: string; language: string }>;
  token_limit_exceeded: boolean;
  partial_generation: boolean;
  temp_file_path: string | null;
  validation: { valid: boolean; errors: Array<Record<string, unknown>>; warnings: Array<Record<string, unknown>> } | null;
}

const bodyOf = (reply: Reply) => reply.json as AIResponseBody;

/** The principal every caller is (README, Security): a chat it may VIEW is usable without a token. */
const EVERYONE = '000000000000000000000000';

describe('POST /api/v1/ai/generate (HTTP, embedded service, stub OpenAI server, real sandboxed AI modules)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let stub: OpenAiStub;
  let admin: CatalogClient;
  let other: { laui: string; token: string };
  let chats: string;
  let privateChats: string;
  let builtin: string;
  let python: string;
  let javascript: string;

  const generate = (body: Record<string, unknown>, options: { token?: string; headers?: Record<string, string> } = {}) =>
    svc.client().post('/api/v1/ai/generate', { json: body, ...options });
  const ask = (chat: string, itemType: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}, token?: string) =>
    generate({ prompt: JSON.stringify(spec), chat_laui: chat, item_type: itemType, ai_provider: 'openai', ...extra }, token === undefined ? {} : { token });
  const chat = (name: string, fields: Record<string, unknown>) => admin.createOk({ item_type: 'chat', name, parent_laui: chats, ...fields });

  before(async () => {
    stub = await new OpenAiStub().start();
    svc = await startTestService();
    const { token } = await svc.login();
    admin = catalogClient(svc, token);
    other = await createUser(svc, token, 'stranger');
    const tree = await admin.bootstrap('ai-co');
    // Shared with everyone: most tests here call without a token, which only such chats answer.
    chats = await admin.createOk({ item_type: 'folder.chat', name: 'chats', parent_laui: tree.folders.ai, access_patch: { add: { viewers: { [EVERYONE]: 'true' } } } });
    privateChats = await admin.createOk({ item_type: 'folder.chat', name: 'private', parent_laui: tree.folders.ai });
    builtin = await chat('builtin', { connection: { api_key: 'sk-test-key', model: 'stub-model', token_limit: 256, base_url: stub.url } });
    python = await chat('python', { codeblock: { language: 'python', code: PY_MODULE }, connection: { api_key: 'sk-python-secret', model: 'm', token_limit: 100 } });
    javascript = await chat('javascript', { codeblock: { language: 'javascript', content: JS_MODULE }, connection: { api_key: 'sk-js', model: 'm' } });
  });
  after(async () => {
    await svc?.stop();
    await stub?.stop();
  });

  describe('the request body (422)', () => {
    it('given no body fields, when generating, then 422 lists prompt, chat_laui, item_type and ai_provider as missing', async () => {
      const reply = await generate({});
      expect(reply.status).to.equal(422);
      const detail = (reply.json as { detail: Array<{ type: string; loc: unknown[] }> }).detail;
      expect(detail.map((entry) => [entry.type, entry.loc])).to.have.deep.members([
        ['missing', ['body', 'prompt']],
        ['missing', ['body', 'chat_laui']],
        ['missing', ['body', 'item_type']],
        ['missing', ['body', 'ai_provider']],
      ]);
    });

    it('given an unknown item_type, when generating, then 422 whose message lists the allowed item types', async () => {
      const reply = await ask(builtin, 'generate', { reply: 'x' });
      expect(reply.status).to.equal(422);
      expect((reply.json as { detail: unknown }).detail).to.deep.equal([
        {
          type: 'enum',
          loc: ['body', 'item_type'],
          msg: "Input should be 'action', 'operator', 'payload', 'chat' or 'agent'",
          input: 'generate',
          ctx: { expected: "'action', 'operator', 'payload', 'chat' or 'agent'" },
        },
      ]);
    });

    it('given a malformed chat_laui, session_id or messages, when generating, then 422 names each', async () => {
      const reply = await generate({ prompt: 'p', chat_laui: 'nope', item_type: 'action', ai_provider: 'openai', session_id: 'x', messages: [{ role: 'user' }] });
      expect(reply.status).to.equal(422);
      const detail = (reply.json as { detail: Array<{ loc: unknown[]; msg: string }> }).detail;
      expect(detail.map((entry) => [entry.loc, entry.msg])).to.have.deep.members([
        [['body', 'chat_laui'], 'Invalid ObjectId'],
        [['body', 'session_id'], 'Invalid ObjectId'],
        [['body', 'messages', 0, 'content'], 'Field required'],
      ]);
    });
  });

  describe('the built-in module against an OpenAI-compatible server', () => {
    it('given a chat without a codeblock, when an operator is generated, then the model is called with the system prompt and the reply becomes an AIResponse with validation', async () => {
      stub.answer({ content: fenced({ ...operatorFields(VALID_OPERATOR), message: 'A daily loader.' }) });
      const before = stub.requests.length;
      const reply = await ask(builtin, 'operator', { want: 'a loader' }, { include_guide_doc: true, skill_content: 'SKILL: write terse code.' });
      expect(reply.status, reply.text).to.equal(200);
      const body = bodyOf(reply);
      expect(body.message).to.equal('A daily loader.');
      expect(body.token_limit_exceeded).to.equal(false);
      expect(body.partial_generation).to.equal(false);
      expect(body.generated_content).to.deep.equal({
        codeblock: { completed: true, content: VALID_OPERATOR, language: 'python' },
        bashblock: { completed: true, content: '', language: 'bash' },
        payload: { completed: true, content: JSON.stringify({ table: 'sales', day: '{{ds}}' }, null, 2), language: 'json' },
        connection: { completed: true, content: JSON.stringify({ host: 'db.example', password: '<password>' }, null, 2), language: 'json' },
      });
      expect(body.validation).to.deep.equal({ valid: true, errors: [], warnings: [] });
      expect(body.temp_file_path).to.be.a('string');
      expect(readFileSync(body.temp_file_path ?? '', 'utf8')).to.equal(VALID_OPERATOR);
      expect(reply.headers.get('x-session-id')).to.match(/^[0-9a-f]{24}$/);

      expect(stub.requests.length).to.equal(before + 1);
      const sent = stub.requests.at(-1);
      expect(sent?.headers.authorization).to.equal('Bearer sk-test-key');
      expect(sent?.body).to.include({ model: 'stub-model', max_tokens: 256 });
      expect(sent?.body).not.to.have.property('tools');
      const messages = sent?.body.messages as Array<{ role: string; content: string }>;
      expect(messages.map((message) => message.role)).to.deep.equal(['system', 'user']);
      expect(messages[1]?.content).to.equal(JSON.stringify({ want: 'a loader' }));
      const system = messages[0]?.content ?? '';
      expect(system.startsWith('SKILL: write terse code.')).to.equal(true);
      for (const part of ['"codeblock", "bashblock", "payload", "connection"', 'check_completion', 'initialize', 'finish', 'JSON Schema', 'Guide:', '## ']) {
        if (part === '## ') expect(system).not.to.include('## Operators and actions');
        else expect(system).to.include(part);
      }
      expect(system).not.to.include('Install guide');
    });

    it('given finish_reason length with a cut reply, when generating, then 206 keeps the fields written to their end and empties the others', async () => {
      const cut = '```json\n{"payload": {"table": "sales"}, "connection": {"host": "db"}, "bashblock": {"language": "bash", "content": "pip install --user x"}, "codeblock": {"language": "python", "content": "def run(conn';
      stub.answer({ content: cut, finish_reason: 'length' });
      const reply = await ask(builtin, 'operator', { want: 'long' });
      expect(reply.status, reply.text).to.equal(206);
      const body = bodyOf(reply);
      expect(body).to.include({ token_limit_exceeded: true, partial_generation: true, temp_file_path: null, validation: null });
      expect(body.generated_content.codeblock).to.deep.equal({ completed: false, content: '', language: 'python' });
      expect(body.generated_content.bashblock).to.deep.equal({ completed: true, content: 'pip install --user x', language: 'bash' });
      expect(body.generated_content.payload?.completed).to.equal(true);
      expect(body.generated_content.connection?.completed).to.equal(true);
      expect(body.message).to.match(/token limit/);
    });

    it('given the provider refuses for the context length, when generating, then 206 with every field unfinished', async () => {
      stub.answer({ status: 400, error: { message: "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens.", code: 'context_length_exceeded', param: 'messages' } });
      const reply = await ask(builtin, 'payload', { want: 'huge' });
      expect(reply.status, reply.text).to.equal(206);
      const body = bodyOf(reply);
      expect(body.generated_content).to.deep.equal({ payload: { completed: false, content: '', language: 'json' } });
      expect(body).to.include({ token_limit_exceeded: true, partial_generation: true, temp_file_path: null, validation: null });
      expect(body.message).to.include('maximum context length');
    });

    it('given another provider error, when generating, then 500 `Internal server error: <provider error>`', async () => {
      stub.answer({ status: 401, error: { message: 'Incorrect API key provided', code: 'invalid_api_key' } });
      const reply = await ask(builtin, 'payload', { want: 'x' });
      expect(reply.status).to.equal(500);
      expect(reply.json).to.deep.equal({ detail: 'Internal server error: 401 Incorrect API key provided' });
    });

    it('given a payload reply, when generating, then validation and temp_file_path are null', async () => {
      stub.answer({ content: JSON.stringify({ payload: { table: 'x' } }) });
      const reply = await ask(builtin, 'payload', { want: 'payload' });
      expect(reply.status).to.equal(200);
      expect(bodyOf(reply)).to.deep.include({ validation: null, temp_file_path: null });
      expect(bodyOf(reply).generated_content.payload?.completed).to.equal(true);
    });

    it('given connection_laui naming a connection item, when a known caller with VIEW generates, then its credentials are used; anonymous (the connection not shared with everyone): 401', async () => {
      const connection = await admin.createOk({
        item_type: 'connection',
        name: 'llm',
        parent_laui: (await admin.bootstrap('ai-co')).folders.connection,
        content: { api_key: 'sk-override', model: 'override-model', base_url: stub.url },
      });
      stub.answer({ content: JSON.stringify({ payload: { a: 1 } }) });
      const viaBuiltin = await ask(builtin, 'payload', { want: 'x' }, { connection_laui: connection }, admin.token);
      expect(viaBuiltin.status, viaBuiltin.text).to.equal(200);
      expect(stub.requests.at(-1)?.headers.authorization).to.equal('Bearer sk-override');
      expect(stub.requests.at(-1)?.body.model).to.equal('override-model');
      expect((await ask(builtin, 'payload', { want: 'x' }, { connection_laui: connection })).status).to.equal(401);
    });
  });

  describe('chat items and credentials (500)', () => {
    it('given an unknown chat, or an item that is no chat, when generating, then 500 naming the missing chat item', async () => {
      const missing = newLaui();
      const reply = await ask(missing, 'action', { reply: 'x' }, {}, admin.token);
      expect(reply.status).to.equal(500);
      expect(reply.json).to.deep.equal({ detail: `Internal server error: chat item not found: ${missing}` });
      expect((await ask(chats, 'action', { reply: 'x' }, {}, admin.token)).json).to.deep.equal({ detail: `Internal server error: chat item not found: ${chats}` });
    });

    it('given a built-in chat without a model or an api_key, or without a connection, when generating, then 500 saying which credentials are missing', async () => {
      const noModel = await chat('no-model', { connection: { api_key: 'k' } });
      expect((await ask(noModel, 'action', {})).json).to.deep.equal({ detail: `Internal server error: LLM credentials missing in the connection of chat ${noModel}: model` });
      const noKey = await chat('no-key', { connection: { model: 'gpt' } });
      expect((await ask(noKey, 'action', {})).json).to.deep.equal({ detail: `Internal server error: LLM credentials missing in the connection of chat ${noKey}: api_key` });
      const none = await chat('no-connection', {});
      const reply = await ask(none, 'action', {});
      expect(reply.status).to.equal(500);
      expect(reply.json).to.deep.equal({ detail: `Internal server error: LLM credentials missing: chat ${none} has no connection` });
    });
  });

  describe('a chat\'s own AI module (sandboxed Python and JavaScript)', () => {
    it('given a Python module and a valid operator reply, when generating, then 200 with a valid validation; the module\'s output is in the session log with the key masked', async () => {
      const reply = await ask(python, 'operator', { reply: fenced(operatorFields(VALID_OPERATOR)) });
      expect(reply.status, reply.text).to.equal(200);
      expect(bodyOf(reply).validation).to.deep.equal({ valid: true, errors: [], warnings: [] });
      const sessionId = reply.headers.get('x-session-id') ?? '';
      await svc.service.logger.flush();
      const lines = readSessionLog(svc.config.logDir, sessionId);
      const printed = lines.find((line) => String(line.message).startsWith('python module got'));
      expect(printed).to.include({ message: 'python module got 2 messages, key ********', step: 'ai_module', category: 'TASK', stream: 'stdout' });
      expect(lines.at(-1)).to.include({ session_end: true, status: 'success' });
    });

    it('given a Python module and an invalid operator (syntax error, no finish), when generating, then validation lists both errors', async () => {
      const reply = await ask(python, 'operator', { reply: fenced(operatorFields(INVALID_OPERATOR)) });
      expect(reply.status, reply.text).to.equal(200);
      const validation = bodyOf(reply).validation;
      expect(validation?.valid).to.equal(false);
      expect(validation?.warnings).to.deep.equal([]);
      expect(validation?.errors.map((entry) => entry.type)).to.deep.equal(['syntax_error', 'missing_function']);
      expect(validation?.errors[0]).to.include({ line: 4 });
      expect(String(validation?.errors[0]?.message)).to.match(/SyntaxError/);
      expect(validation?.errors[1]).to.deep.equal({ type: 'missing_function', message: 'the codeblock does not define finish', function: 'finish' });
    });

    it('given a JavaScript module and JavaScript actions (CommonJS valid, ES module broken), when generating, then node checks each in its module form', async () => {
      const valid = await ask(javascript, 'action', { reply: JSON.stringify({ codeblock: { language: 'javascript', content: CJS_ACTION }, bashblock: { language: 'bash', content: '' } }) });
      expect(valid.status, valid.text).to.equal(200);
      expect(bodyOf(valid).validation).to.deep.equal({ valid: true, errors: [], warnings: [] });
      expect(bodyOf(valid).temp_file_path).to.match(/module\.js$/);
      const broken = await ask(javascript, 'action', { reply: JSON.stringify({ codeblock: { language: 'js', code: BROKEN_ESM_ACTION }, bashblock: '' }) });
      expect(broken.status, broken.text).to.equal(200);
      expect(bodyOf(broken).generated_content.codeblock?.language).to.equal('javascript');
      const validation = bodyOf(broken).validation;
      expect(validation?.valid).to.equal(false);
      expect(validation?.errors.map((entry) => entry.type)).to.deep.equal(['syntax_error']);
      expect(validation?.errors[0]).to.include({ line: 2 });
      expect(String(validation?.errors[0]?.message)).to.match(/SyntaxError/).and.not.to.include('coderun');
    });

    it('given a JavaScript module answering finish_reason length, when generating, then 206', async () => {
      const reply = await ask(javascript, 'action', { reply: '{"bashblock": {"language": "bash", "content": ""}, "codeblock": {"language": "javascript", "content": "exp', finish_reason: 'length' });
      expect(reply.status, reply.text).to.equal(206);
      expect(bodyOf(reply).generated_content).to.deep.equal({
        codeblock: { completed: false, content: '', language: 'javascript' },
        bashblock: { completed: true, content: '', language: 'bash' },
      });
      expect(bodyOf(reply)).to.include({ validation: null, temp_file_path: null });
    });

    it('given a Python module whose reply object says finish_reason length, when an agent is generated, then 206', async () => {
      const reply = await ask(python, 'agent', { reply: '```json\n{"codeblock": {"language": "python", "content": "def run(', finish_reason: 'length' });
      expect(reply.status).to.equal(206);
      expect(bodyOf(reply).generated_content.codeblock?.completed).to.equal(false);
    });

    it('given modules that raise, when generating, then 500 with the exception; one that raises for the context length is 206', async () => {
      const python500 = await ask(python, 'action', { raise: 'boom from the module' });
      expect(python500.status).to.equal(500);
      expect(python500.json).to.deep.equal({ detail: 'Internal server error: ValueError: boom from the module' });
      const js500 = await ask(javascript, 'action', { raise: 'js boom' });
      expect(js500.status).to.equal(500);
      expect((js500.json as { detail: string }).detail).to.match(/^Internal server error: .*js boom/);
      const limited = await ask(python, 'action', { raise: "This model's maximum context length is 8192 tokens" });
      expect(limited.status).to.equal(206);
    });

    it('given a module returning neither a string nor an object, when generating, then 500 naming the module contract', async () => {
      const odd = await chat('odd', { codeblock: { language: 'python', code: 'def run(connection, messages):\n    return 42\n' }, connection: { model: 'm' } });
      const reply = await ask(odd, 'payload', {});
      expect(reply.status).to.equal(500);
      expect((reply.json as { detail: string }).detail).to.match(/must return a string or an object \{content, finish_reason, tool_calls\}/);
    });

    it('given a session_id, when its caller generates again without messages or generated_content, then the session\'s conversation and output are the context and its module file is rewritten in place; another caller does not continue it', async () => {
      const sessionId = newLaui();
      const first = await ask(python, 'action', { reply: JSON.stringify({ codeblock: { language: 'python', content: 'def run(c, v, x):\n    return 1\n' }, bashblock: '' }) }, { session_id: sessionId }, admin.token);
      expect(first.status, first.text).to.equal(200);
      expect(first.headers.get('x-session-id')).to.equal(sessionId);
      const path = bodyOf(first).temp_file_path;
      const second = await ask(python, 'action', { show_system: true }, { session_id: sessionId }, admin.token);
      expect(second.status, second.text).to.equal(200);
      const shown = bodyOf(second).message;
      expect(shown).to.include('The current version, to refine');
      expect(shown).to.include('return 1');
      const anonymous = await ask(python, 'action', { show_system: true }, { session_id: sessionId });
      expect(bodyOf(anonymous).message).not.to.include('The current version');
      const third = await ask(python, 'action', { reply: JSON.stringify({ codeblock: { language: 'python', content: 'def run(c, v, x):\n    return 2\n' }, bashblock: '' }) }, { session_id: sessionId }, admin.token);
      expect(bodyOf(third).temp_file_path).to.equal(path);
      expect(readFileSync(path ?? '', 'utf8')).to.include('return 2');
      expect(existsSync(path ?? '')).to.equal(true);
    });
  });

  describe('access (public route, optional identity)', () => {
    it('given no token, when a chat shared with everyone is used, then it answers (spec 5.1: public); one that is not: 401', async () => {
      const reply = await ask(python, 'payload', { reply: '{"payload": {}}' });
      expect(reply.status, reply.text).to.equal(200);
      const hidden = await admin.createOk({ item_type: 'chat', name: 'hidden', parent_laui: privateChats, codeblock: { language: 'python', code: PY_MODULE }, connection: { model: 'm' } });
      const refused = await ask(hidden, 'payload', { reply: '{"payload": {}}' });
      expect(refused.status).to.equal(401);
      expect(refused.json).to.deep.equal({ detail: 'User not authenticated' });
    });

    it('given a token of a user who cannot VIEW the chat, when generating, then 403; a bad token is 401', async () => {
      const mine = await admin.createOk({ item_type: 'chat', name: 'mine', parent_laui: privateChats, codeblock: { language: 'python', code: PY_MODULE }, connection: { model: 'm' } });
      const reply = await ask(mine, 'payload', { reply: '{"payload": {}}' }, {}, other.token);
      expect(reply.status).to.equal(403);
      expect(reply.json).to.deep.equal({ detail: 'Access denied' });
      const cookie = await generate({ prompt: '{}', chat_laui: mine, item_type: 'payload', ai_provider: 'openai' }, { headers: { cookie: `frontend_token=${other.token}` } });
      expect(cookie.status).to.equal(403);
      expect((await ask(mine, 'payload', { reply: '{}' }, {}, `${other.token}x`)).status).to.equal(401);
    });
  });

  describe('chat_history', () => {
    it('given a known caller, when generating, then the call is recorded in their user folder (made on first use); an anonymous call is not', async () => {
      const before = ((await admin.search({ item_filter: { item_type: 'chat_history' } })).json as { items: unknown[] }).items.length;
      const reply = await ask(python, 'payload', { reply: '{"payload": {"day": "{{ds}}"}}' }, { messages: [{ role: 'user', content: 'earlier' }, { role: 'assistant', content: 'ok' }] }, admin.token);
      expect(reply.status, reply.text).to.equal(200);
      const folders = ((await admin.search({ item_filter: { item_type: 'folder.user' }, projection: { include: ['name', 'is_root'] } })).json as { items: Array<Record<string, unknown>> }).items;
      expect(folders.map((folder) => [folder.name, folder.is_root])).to.deep.equal([['admin', true]]);
      const histories = ((await admin.search({ item_filter: { item_type: 'chat_history', parent_laui: String(folders[0]?.laui) } })).json as { items: Array<{ laui: string }> }).items;
      expect(histories.length).to.equal(before + 1);
      const item = (await admin.get({ item_laui: histories.at(-1)?.laui ?? '' })).json as Record<string, unknown>;
      expect(item).to.deep.include({
        item_type: 'chat_history',
        created_item_type: 'payload',
        ai_provider: 'openai',
        connection_laui: python,
        connection_name: 'python',
        messages: [
          { role: 'user', content: 'earlier' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: JSON.stringify({ reply: '{"payload": {"day": "{{ds}}"}}' }) },
          { role: 'assistant', content: '{"payload": {"day": "{{ds}}"}}' },
        ],
        generated_content: { payload: { completed: true, content: JSON.stringify({ day: '{{ds}}' }, null, 2), language: 'json' } },
      });
      await ask(python, 'payload', { reply: '{"payload": {}}' });
      const after = ((await admin.search({ item_filter: { item_type: 'chat_history' } })).json as { items: unknown[] }).items.length;
      expect(after).to.equal(before + 1);
    });
  });
});

describe('POST /api/v1/ai/generate with PUBLIC_ROUTES_REQUIRE_AUTH', function () {
  this.timeout(60_000);
  let svc: TestService;
  after(async () => svc?.stop());

  it('given no token, when generating, then 401; with one, the route answers', async () => {
    svc = await startTestService({ PUBLIC_ROUTES_REQUIRE_AUTH: 'true' });
    const { token } = await svc.login();
    const body = { prompt: 'p', chat_laui: newLaui(), item_type: 'payload', ai_provider: 'openai' };
    const refused = await svc.client().post('/api/v1/ai/generate', { json: body });
    expect(refused.status).to.equal(401);
    expect(refused.json).to.deep.equal({ detail: 'User not authenticated' });
    const answered = await svc.client().post('/api/v1/ai/generate', { json: body, token });
    expect(answered.status).to.equal(500);
    expect((answered.json as { detail: string }).detail).to.match(/chat item not found/);
  });
});
