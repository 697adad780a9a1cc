import { expect } from 'chai';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../../shared/clock.ts';
import { AiModuleError, type AiInvocation, type AiModule } from '../../shared/ports/AiModule.ts';
import type { LogEntry, Logger } from '../../shared/ports/Logger.ts';
import { createAiModule } from '../../ops/ai/createAiModule.ts';
import { ProcessCodeRunner } from '../../ops/worker/ProcessCodeRunner.ts';
import { OpenAiStub } from '../support/openAiStub.ts';

const TOOLS = [{ name: 'catalog_get', description: 'Reads an item', input_schema: { type: 'object', properties: { item_laui: { type: 'string' } }, required: ['item_laui'] } }];

const PY_TOOLS = `
def run(connection, messages, tools=None):
    if tools is None:
        return "no tools for " + connection["model"]
    print("tools:", ",".join(tool["name"] for tool in tools), "key", connection["api_key"])
    return {"content": "calling", "finish_reason": "tool_calls", "tool_calls": [{"name": tools[0]["name"], "arguments": {"item_laui": messages[-1]["content"]}}]}
`;

/** CommonJS, two parameters: the generate form of the contract. */
const JS_TWO_ARGS = `
module.exports = {
  run(connection, messages) {
    return { content: messages.map((m) => m.role).join(','), finish_reason: null, tool_calls: [{ function: { name: 'x', arguments: '{"a":1}' } }] };
  },
};
`;

const PY_SLOW = `
import time
def run(connection, messages, tools=None):
    time.sleep(30)
`;

class MemoryLogger implements Logger {
  readonly entries: LogEntry[] = [];
  log(entry: LogEntry): void {
    this.entries.push(entry);
  }
  async flush(): Promise<void> {}
}

const freePort = async (): Promise<number> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
};

/** The token counts the stub reports with every completion. */
const STUB_USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

describe('AiModule (ops/ai): the built-in module against a stub server, a chat\'s own module in the sandbox', function () {
  this.timeout(60_000);
  let stub: OpenAiStub;
  let runner: ProcessCodeRunner;
  let logger: MemoryLogger;
  let ai: AiModule;
  let session = 0;

  const invocation = (fields: Partial<AiInvocation>): AiInvocation => ({
    codeblock: null,
    connection: { api_key: 'sk-1', model: 'stub-model', base_url: stub.url },
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hello' },
    ],
    sessionId: `65a00000000000000000${String((session += 1)).padStart(4, '0')}`,
    ...fields,
  });

  before(async () => {
    stub = await new OpenAiStub().start();
    runner = new ProcessCodeRunner({ poolSize: 0 });
    logger = new MemoryLogger();
    ai = createAiModule({ runner, logger, clock: systemClock, timeoutMs: 5000, maxRetries: 0, limits: { memoryMb: 256, maxOutputBytes: 64 * 1024 } });
  });
  after(async () => {
    await runner?.close();
    await stub?.stop();
  });

  describe('built-in module (no codeblock, or an empty one)', () => {
    it('given tools, when invoked, then they are sent as function tools and the reply\'s tool calls come back by name with their JSON arguments', async () => {
      stub.answer({ content: null, tool_calls: [{ id: 'call_xyz', name: 'catalog_get', arguments: '{"item_laui":"abc"}' }] });
      const reply = await ai.invoke(invocation({ codeblock: { language: 'python', content: '  ' }, tools: TOOLS, connection: { api_key: 'sk-1', model: 'stub-model', base_url: stub.url, token_limit: 64, organization: 'org-1' } }));
      expect(reply).to.deep.equal({ content: '', finish_reason: 'tool_calls', tool_calls: [{ name: 'catalog_get', arguments: '{"item_laui":"abc"}' }], usage: STUB_USAGE });
      const sent = stub.requests.at(-1);
      expect(sent?.headers['openai-organization']).to.equal('org-1');
      expect(sent?.body).to.deep.include({
        model: 'stub-model',
        max_tokens: 64,
        tools: [{ type: 'function', function: { name: 'catalog_get', description: 'Reads an item', parameters: TOOLS[0]?.input_schema } }],
      });
    });

    it('given the tool results of the session\'s last reply, when invoked again, then they answer its calls by id and arguments', async () => {
      const sessionId = '65a0000000000000000000a1';
      stub.answer({ content: '', tool_calls: [{ id: 'call_1st', name: 'catalog_get', arguments: '{"item_laui":"abc"}' }] }, { content: 'the item is a payload' });
      await ai.invoke(invocation({ sessionId, tools: TOOLS }));
      const reply = await ai.invoke(
        invocation({
          sessionId,
          tools: TOOLS,
          messages: [
            { role: 'user', content: 'hello' },
            { role: 'assistant', content: '' },
            { role: 'tool', name: 'catalog_get', content: '{"item_type":"payload"}' },
          ],
        }),
      );
      expect(reply).to.deep.equal({ content: 'the item is a payload', finish_reason: 'stop', tool_calls: [], usage: STUB_USAGE });
      expect(stub.requests.at(-1)?.body.messages).to.deep.equal([
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'call_1st', type: 'function', function: { name: 'catalog_get', arguments: '{"item_laui":"abc"}' } }] },
        { role: 'tool', tool_call_id: 'call_1st', content: '{"item_type":"payload"}' },
      ]);
    });

    it('given finish_reason length, when invoked, then it is passed on', async () => {
      stub.answer({ content: 'cut he', finish_reason: 'length' });
      expect(await ai.invoke(invocation({}))).to.deep.equal({ content: 'cut he', finish_reason: 'length', tool_calls: [], usage: STUB_USAGE });
    });

    it('given a llama.cpp context refusal, when invoked, then token_limit; another error, provider with the provider\'s message', async () => {
      stub.answer({ status: 400, error: { message: 'the request exceeds the available context size, try increasing it', type: 'exceed_context_size_error' } });
      const limited = await ai.invoke(invocation({})).catch((error: unknown) => error);
      expect(limited).to.be.instanceOf(AiModuleError).and.to.include({ kind: 'token_limit' });
      stub.answer({ status: 404, error: { message: 'The model `nope` does not exist', code: 'model_not_found' } });
      const missing = await ai.invoke(invocation({})).catch((error: unknown) => error);
      expect(missing).to.be.instanceOf(AiModuleError).and.to.include({ kind: 'provider', message: '404 The model `nope` does not exist' });
    });

    it('given a provider that does not answer in time or cannot be reached, when invoked, then a provider error saying so', async () => {
      const quick = createAiModule({ runner, logger, clock: systemClock, timeoutMs: 300, maxRetries: 0, limits: { memoryMb: 256, maxOutputBytes: 1024 } });
      stub.answer({ content: 'late', delayMs: 2000 });
      const late = await quick.invoke(invocation({})).catch((error: unknown) => error);
      expect(late).to.be.instanceOf(AiModuleError).and.to.include({ kind: 'provider', message: 'no answer from the provider within 0.3 s' });
      const port = await freePort();
      const down = await ai.invoke(invocation({ connection: { model: 'm', base_url: `http://127.0.0.1:${port}/v1` } })).catch((error: unknown) => error);
      expect(down).to.be.instanceOf(AiModuleError).and.to.include({ kind: 'provider' });
      expect((down as Error).message).to.match(new RegExp(`^could not reach the provider at http://127.0.0.1:${port}/v1`));
      stub.answer({ content: 'ok' });
    });

    it('given a connection without a model, when invoked, then a provider error naming it (nothing is sent)', async () => {
      const before = stub.requests.length;
      const error = await ai.invoke(invocation({ connection: { api_key: 'k' } })).catch((caught: unknown) => caught);
      expect(error).to.be.instanceOf(AiModuleError).and.to.include({ kind: 'provider', message: "LLM credentials missing in the chat's connection: model" });
      expect(stub.requests.length).to.equal(before);
    });
  });

  describe('a chat\'s own module (sandboxed)', () => {
    it('given a Python module and tools, when invoked, then run gets (connection, messages, tools), its tool calls come back and its output is logged masked', async () => {
      const sessionId = '65a0000000000000000000b1';
      const reply = await ai.invoke(invocation({ sessionId, codeblock: { language: 'python', content: PY_TOOLS }, connection: { api_key: 'sk-very-secret', model: 'm' }, tools: TOOLS }));
      expect(reply).to.deep.equal({ content: 'calling', finish_reason: 'tool_calls', tool_calls: [{ name: 'catalog_get', arguments: { item_laui: 'hello' } }] });
      const lines = logger.entries.filter((entry) => entry.session_id === sessionId);
      expect(lines.map((line) => line.message)).to.deep.equal(['tools: catalog_get key ********', 'AI module returned after ' + String(lines[1]?.duration_seconds) + ' s']);
      expect(lines[1]).to.include({ session_end: true, step: 'ai_module', category: 'TASK', status: 'success' });
    });

    it('given no tools, when invoked, then a Python run(connection, messages, tools=None) gets None and a two-parameter JavaScript run works', async () => {
      expect(await ai.invoke(invocation({ codeblock: { language: 'python', content: PY_TOOLS }, connection: { model: 'm1' } }))).to.deep.equal({ content: 'no tools for m1', finish_reason: null, tool_calls: [] });
      const js = await ai.invoke(invocation({ codeblock: { language: 'javascript', content: JS_TWO_ARGS } }));
      expect(js).to.deep.equal({ content: 'system,user', finish_reason: null, tool_calls: [{ name: 'x', arguments: '{"a":1}' }] });
    });

    it('given a module that outlives the time limit, an unknown language or no run, when invoked, then a module error', async () => {
      const quick = createAiModule({ runner, logger, clock: systemClock, timeoutMs: 1000, maxRetries: 0, limits: { memoryMb: 256, maxOutputBytes: 1024 } });
      const slow = await quick.invoke(invocation({ codeblock: { language: 'python', content: PY_SLOW } })).catch((error: unknown) => error);
      expect(slow).to.be.instanceOf(AiModuleError).and.to.include({ kind: 'module', message: 'AI module timed out after 1 s' });
      const ruby = await ai.invoke(invocation({ codeblock: { language: 'ruby', content: 'puts 1' } })).catch((error: unknown) => error);
      expect(ruby).to.be.instanceOf(AiModuleError).and.to.include({ kind: 'module' });
      const none = await ai.invoke(invocation({ codeblock: { language: 'python', content: 'x = 1' } })).catch((error: unknown) => error);
      expect(none).to.be.instanceOf(AiModuleError).and.to.include({ kind: 'module', message: 'invalid code: no run function is defined' });
    });
  });

  describe('syntax checks (ProcessCodeRunner.checkSyntax)', () => {
    const limits = { timeoutMs: 10_000, memoryMb: 256, maxOutputBytes: 64 * 1024 };
    it('given valid and broken Python, CommonJS and ES module code, when checked, then the interpreter\'s verdict with the line', async () => {
      expect(await runner.checkSyntax({ language: 'python', code: 'def run():\n    return 1\n' }, limits)).to.deep.equal({ checked: true, ok: true });
      expect(await runner.checkSyntax({ language: 'javascript', code: 'import fs from "node:fs";\nexport const run = () => fs;\n' }, limits)).to.deep.equal({ checked: true, ok: true });
      expect(await runner.checkSyntax({ language: 'javascript', code: 'const fs = require("fs");\nmodule.exports = { run() {} };\n' }, limits)).to.deep.equal({ checked: true, ok: true });
      const python = await runner.checkSyntax({ language: 'python', code: 'x = 1\ndef run(:\n' }, limits);
      expect(python).to.include({ checked: true, ok: false, line: 2 });
      const cjs = await runner.checkSyntax({ language: 'javascript', code: 'const a = 1;\nconst b = ;\nconst c = 2;\n' }, limits);
      expect(cjs).to.include({ checked: true, ok: false, line: 2 });
      expect((cjs as { message: string }).message).to.match(/^user_code\.cjs:2/).and.not.to.match(/ at |Node\.js v/);
    });

    it('given a runner whose code runs are refused, when checked, then not checked, with the reason', async () => {
      const refused = new ProcessCodeRunner({ poolSize: 0, disabled: 'code runs are refused here' });
      try {
        expect(await refused.checkSyntax({ language: 'python', code: 'x = 1' }, limits)).to.deep.equal({ checked: false, reason: 'code runs are refused here' });
      } finally {
        await refused.close();
      }
    });
  });
});
