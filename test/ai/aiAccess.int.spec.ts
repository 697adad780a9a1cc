import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/testService.ts';
import { catalogClient, createUser, type CatalogClient } from '../support/catalogFixture.ts';
import { OpenAiStub } from '../support/openAiStub.ts';

const EVERYONE = '000000000000000000000000';
const GENERATE = '/api/v1/ai/generate';
const AGENT = '/api/v1/ai/agent';

/** What an internal server answers (an admin page, a metadata service): a large body no caller may read back. */
const INTERNAL_MARKER = 'INTERNAL-ADMIN-PAGE';
const internalBody = `<html><title>${INTERNAL_MARKER}</title>\r\n\u001b[31m${'db_password=hunter2;'.repeat(1600)}</html>`;

type LogLine = Record<string, unknown>;

/**
 * The public AI routes (spec 4.11, 5.1) as an attacker found them: an anonymous caller used anyone's
 * chat (and its provider key) and was not recorded; a chat whose base_url points at an internal
 * address had that server's answer relayed in the 500.
 */
describe('AI routes: who may use a chat, what is recorded, what a failing provider\'s answer shows', function () {
  this.timeout(120_000);
  let svc: TestService;
  let stub: OpenAiStub;
  let internal: Server;
  let internalUrl: string;
  let alice: CatalogClient;
  let bobToken: string;
  let privateChat: string;
  let publicChat: string;
  let privateConnection: string;
  let internalChat: string;
  let internalJsonChat: string;

  const post = (path: string, body: Record<string, unknown>, token?: string) => svc.client().post(path, { json: body, ...(token === undefined ? {} : { token }) });
  const generate = (chat: string, token?: string, extra: Record<string, unknown> = {}) =>
    post(GENERATE, { prompt: 'a payload please', chat_laui: chat, item_type: 'payload', ai_provider: 'openai', ...extra }, token);
  const agent = (chat: string, token?: string, extra: Record<string, unknown> = {}) => post(AGENT, { prompt: 'hi', chat_laui: chat, enable_tools: false, ...extra }, token);
  const aiCallLines = async (): Promise<LogLine[]> => {
    await svc.service.logger.flush();
    const dir = join(svc.config.logDir, 'API');
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .flatMap((file) => readFileSync(join(dir, file), 'utf8').split('\n'))
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as LogLine)
      .filter((line) => line.step === 'ai_call');
  };

  before(async () => {
    stub = await new OpenAiStub().start();
    stub.answer({ content: '{"payload": {"day": "{{ds}}"}}' });
    internal = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const json = req.url?.includes('json') ?? false;
        res.writeHead(json ? 400 : 404, { 'content-type': json ? 'application/json' : 'text/html' });
        res.end(json ? JSON.stringify({ error: { message: `${INTERNAL_MARKER}\n${'x'.repeat(5000)}`, type: 'invalid_request_error' } }) : internalBody);
      });
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;

    svc = await startTestService({ AI_MAX_RETRIES: '0', WORKER_POOL_SIZE: '0' });
    const admin = await svc.login();
    alice = catalogClient(svc, (await createUser(svc, admin.token, 'alice')).token);
    bobToken = (await createUser(svc, admin.token, 'bob')).token;
    const tree = await alice.bootstrap('alice-ai');
    const llm = { api_key: 'sk-alice-paid-key', model: 'stub-model', base_url: stub.url };
    const chats = await alice.createOk({ item_type: 'folder.chat', name: 'chats', parent_laui: tree.folders.ai });
    privateChat = await alice.createOk({ item_type: 'chat', name: 'private', parent_laui: chats, connection: llm });
    publicChat = await alice.createOk({ item_type: 'chat', name: 'public', parent_laui: chats, connection: llm, access_patch: { add: { viewers: { [EVERYONE]: 'true' } } } });
    privateConnection = await alice.createOk({ item_type: 'connection', name: 'other-llm', parent_laui: tree.folders.connection, content: llm });
    internalChat = await alice.createOk({ item_type: 'chat', name: 'internal', parent_laui: chats, connection: { api_key: 'k', model: 'm', base_url: `${internalUrl}/html` } });
    internalJsonChat = await alice.createOk({ item_type: 'chat', name: 'internal-json', parent_laui: chats, connection: { api_key: 'k', model: 'm', base_url: `${internalUrl}/json` } });
  });
  after(async () => {
    await svc?.stop();
    await stub?.stop();
    await new Promise((resolve) => internal?.close(resolve));
  });

  describe('an anonymous caller (no token, no cookie)', () => {
    it('given alice\'s chat not shared with everyone, when generate or agent is called, then 401 and nothing is sent to the provider', async () => {
      const before = stub.requests.length;
      for (const reply of [await generate(privateChat), await agent(privateChat)]) {
        expect(reply.status, reply.text).to.equal(401);
        expect(reply.json).to.deep.equal({ detail: 'User not authenticated' });
      }
      expect(stub.requests.length).to.equal(before);
    });

    it('given a chat that does not exist, when called, then 401 as well: an anonymous caller learns nothing of what it may not use', async () => {
      expect((await generate('65a0000000000000000000aa')).status).to.equal(401);
      expect((await agent('65a0000000000000000000aa')).status).to.equal(401);
    });

    it('given alice\'s chat shared with everyone, when called, then 200 with its credentials; an override connection_laui not shared is 401', async () => {
      const before = stub.requests.length;
      const generated = await generate(publicChat);
      expect(generated.status, generated.text).to.equal(200);
      const answered = await agent(publicChat);
      expect(answered.status, answered.text).to.equal(200);
      expect(stub.requests.length).to.equal(before + 2);
      expect(stub.requests.at(-1)?.headers.authorization).to.equal('Bearer sk-alice-paid-key');
      const override = await generate(publicChat, undefined, { connection_laui: privateConnection });
      expect(override.status).to.equal(401);
    });

    it('given those calls, when the API log is read, then each is a line naming the route, anonymous, the chat and the tokens the provider counted', async () => {
      const lines = (await aiCallLines()).filter((line) => line.chat_laui === publicChat && line.user_laui === null);
      expect(lines.map((line) => line.route)).to.include.members(['generate', 'agent']);
      for (const line of lines) {
        expect(line).to.include({ level: 'info', category: 'API', username: 'anonymous', connection_laui: publicChat, status: 200, module_calls: 1, prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
        expect(line.ai_session_id).to.match(/^[0-9a-f]{24}$/);
      }
    });

    it('given those calls, when the README\'s query of tokens per chat and caller runs over the API log, then the anonymous calls are counted', async () => {
      await svc.service.logger.flush();
      const sql = "SELECT chat_laui, username, count(*) AS calls, sum(total_tokens) AS tokens FROM logs WHERE step = 'ai_call' GROUP BY ALL";
      // No date: the service's DATA_DIR is this suite's, so the whole category is small (and a run across midnight still counts).
      const reply = await post('/api/v1/logs/query', { category: 'API', sql });
      expect(reply.status, reply.text).to.equal(200);
      const { columns, rows } = reply.json as { columns: string[]; rows: unknown[][] };
      expect(columns, reply.text).to.be.an('array');
      const counted = rows.map((row) => Object.fromEntries(columns.map((column, index) => [column, row[index]])));
      expect(counted).to.deep.include({ chat_laui: publicChat, username: 'anonymous', calls: 2, tokens: 30 });
    });
  });

  describe('a signed-in caller', () => {
    it('given bob, who has no right on alice\'s private chat, when he calls, then 403; her chat shared with everyone he may use', async () => {
      expect((await generate(privateChat, bobToken)).status).to.equal(403);
      expect((await agent(privateChat, bobToken)).status).to.equal(403);
      expect((await generate(publicChat, bobToken)).status).to.equal(200);
    });

    it('given alice\'s own calls, when recorded, then her chat_history items and the log name the chat and the tokens', async () => {
      expect((await generate(privateChat, alice.token)).status).to.equal(200);
      expect((await agent(privateChat, alice.token)).status).to.equal(200);
      const histories = (await alice.search({ item_filter: { item_type: 'chat_history', chat_laui: privateChat }, pagination: { per_page: 100 } })).json as { items: Array<{ laui: string }> };
      expect(histories.items).to.have.length(2);
      for (const { laui } of histories.items) {
        const item = (await alice.get({ item_laui: laui })).json as Record<string, unknown>;
        expect(item).to.deep.include({ chat_laui: privateChat, token_usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
      }
      const lines = (await aiCallLines()).filter((line) => line.chat_laui === privateChat && line.username === 'alice');
      expect(lines.map((line) => line.route)).to.have.members(['generate', 'agent']);
      for (const line of lines) expect(line).to.include({ total_tokens: 15, status: 200 });
    });
  });

  describe('a provider (the chat\'s base_url) that fails', () => {
    it('given a base_url at an internal server answering a large page, when generate or agent is called, then 500 with a one-line summary of at most 200 characters and nothing of the page', async () => {
      for (const reply of [await generate(internalChat, alice.token), await agent(internalChat, alice.token)]) {
        expect(reply.status, reply.text).to.equal(500);
        const { detail } = reply.json as { detail: string };
        expect(detail).to.match(/^Internal server error: 404 /);
        expect(Array.from(detail).length).to.be.at.most(200);
        expect(reply.text).not.to.include(INTERNAL_MARKER);
        expect(reply.text).not.to.include('hunter2');
        expect(reply.text.length).to.be.below(400);
      }
    });

    it('given an OpenAI-style error whose message is long and multi-line, when called, then the message is summarised: one line, at most 200 characters, no control characters', async () => {
      for (const reply of [await generate(internalJsonChat, alice.token), await agent(internalJsonChat, alice.token)]) {
        expect(reply.status, reply.text).to.equal(500);
        const { detail } = reply.json as { detail: string };
        expect(detail).to.match(/^Internal server error: 400 INTERNAL-ADMIN-PAGE x+…$/);
        expect(Array.from(detail)).to.have.length(200);
        expect(detail).not.to.match(/[\p{Cc}\p{Cf}]/u);
      }
    });

    it('given those failures, when the API log is read, then each failed call is an error line with its status', async () => {
      const lines = (await aiCallLines()).filter((line) => line.chat_laui === internalChat || line.chat_laui === internalJsonChat);
      expect(lines).to.have.length(4);
      for (const line of lines) {
        expect(line).to.include({ level: 'error', status: 500, username: 'alice', module_calls: 1, total_tokens: null });
        expect(Array.from(String(line.error)).length).to.be.at.most(200);
      }
    });
  });
});
