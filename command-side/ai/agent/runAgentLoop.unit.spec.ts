import { expect } from 'chai';
import type { AiInvocation, AiModule, AiReply } from '../../../shared/ports/AiModule.ts';
import { AiModuleError } from '../../../shared/ports/AiModule.ts';
import type { AgentToolSession } from '../../../shared/ports/AgentTools.ts';
import { AGENT_MAX_ITERATIONS, MAX_TOOL_RESULT_CHARS, runAgentLoop, stoppedAtBoundNote } from './runAgentLoop.ts';

const reply = (content: string, toolCalls: AiReply['tool_calls'] = []): AiReply => ({ content, finish_reason: 'stop', tool_calls: toolCalls });

/** A module answering from a script, one reply per call, and keeping what it was given. */
const scripted = (replies: Array<AiReply | ((invocation: AiInvocation) => AiReply)>) => {
  const invocations: AiInvocation[] = [];
  const module: AiModule = {
    async invoke(invocation) {
      invocations.push(invocation);
      const next = replies[Math.min(invocations.length - 1, replies.length - 1)];
      if (next === undefined) throw new Error('script exhausted');
      return typeof next === 'function' ? next(invocation) : next;
    },
  };
  return { module, invocations };
};

/** Tools that echo their arguments, fail on `refuse`, throw on `crash`. */
const echoTools = (): AgentToolSession & { calls: Array<[string, Record<string, unknown>]> } => {
  const calls: Array<[string, Record<string, unknown>]> = [];
  return {
    calls,
    tools: [{ name: 'echo', description: 'echo', input_schema: { type: 'object' } }],
    async call(name, args) {
      calls.push([name, args]);
      if (name === 'refuse') return { isError: true, text: 'Error 403: Access denied' };
      if (name === 'quiet_failure') return { isError: true, text: 'no permission' };
      if (name === 'crash') throw new Error('socket hang up');
      if (name === 'big') return { isError: false, text: 'x'.repeat(MAX_TOOL_RESULT_CHARS + 10) };
      return { isError: false, text: JSON.stringify(args) };
    },
    close: async () => undefined,
  };
};

const base = { codeblock: null, connection: { api_key: 'k' }, sessionId: 's1', messages: [{ role: 'system' as const, content: 'sys' }, { role: 'user' as const, content: 'hi' }] };

describe('runAgentLoop (the agent tool loop, spec 4.11 and 8)', () => {
  it('given a module that calls a tool and then answers, when run, then the tool runs with the parsed arguments and its result reaches the second call as a tool message', async () => {
    const { module, invocations } = scripted([reply('let me look', [{ name: 'echo', arguments: '{"a":1}' }]), reply('done')]);
    const tools = echoTools();
    const result = await runAgentLoop({ ...base, module, tools });
    expect(result).to.include({ reply: 'done', iterations: 2, stoppedAtBound: false });
    expect(result.toolCallsMade).to.deep.equal(['echo']);
    expect(tools.calls).to.deep.equal([['echo', { a: 1 }]]);
    const second = invocations[1]?.messages ?? [];
    expect(second.slice(-2)).to.deep.equal([
      { role: 'assistant', content: 'let me look\n[tool calls] echo({"a":1})' },
      { role: 'tool', name: 'echo', content: '{"a":1}' },
    ]);
    expect(invocations[0]?.tools?.map((tool) => tool.name)).to.deep.equal(['echo']);
  });

  it('given failing tool calls (bad JSON, not an object, refused, refused without "Error", thrown), when run, then each failure is its tool message content and the loop goes on', async () => {
    const { module, invocations } = scripted([
      reply('', [
        { name: 'echo', arguments: '{not json' },
        { name: 'echo', arguments: '[1,2]' },
        { name: 'refuse', arguments: {} },
        { name: 'quiet_failure', arguments: {} },
        { name: 'crash', arguments: {} },
      ]),
      reply('sorry'),
    ]);
    const result = await runAgentLoop({ ...base, module, tools: echoTools() });
    expect(result.reply).to.equal('sorry');
    const toolMessages = (invocations[1]?.messages ?? []).filter((message) => message.role === 'tool').map((message) => message.content);
    expect(toolMessages[0]).to.match(/^Error: the arguments of echo are not valid JSON \(.*\): \{not json$/);
    expect(toolMessages.slice(1)).to.deep.equal([
      'Error: the arguments of echo must be a JSON object',
      'Error 403: Access denied',
      'Error: no permission',
      'Error: the call of crash failed: socket hang up',
    ]);
    expect(result.toolCallsMade).to.deep.equal(['echo', 'echo', 'refuse', 'quiet_failure', 'crash']);
  });

  it('given a module that never stops calling tools, when run, then it is called exactly 50 times, the 50th calls are not run and the note says why', async () => {
    const { module, invocations } = scripted([reply('still looking', [{ name: 'echo', arguments: {} }])]);
    const tools = echoTools();
    const result = await runAgentLoop({ ...base, module, tools });
    expect(invocations).to.have.length(AGENT_MAX_ITERATIONS);
    expect(tools.calls).to.have.length(AGENT_MAX_ITERATIONS - 1);
    expect(result).to.include({ iterations: 50, stoppedAtBound: true, reply: `still looking\n\n${stoppedAtBoundNote(50)}` });
  });

  it('given no tool session, when the module still returns tool calls, then nothing runs and its content is the answer', async () => {
    const { module, invocations } = scripted([reply('plain', [{ name: 'echo', arguments: {} }])]);
    const result = await runAgentLoop({ ...base, module, tools: null });
    expect(result).to.include({ reply: 'plain', iterations: 1, stoppedAtBound: false });
    expect(invocations[0]).to.not.have.property('tools');
  });

  it('given a tool result longer than the cap, when run, then the module reads it truncated with the count of what was cut', async () => {
    const { module, invocations } = scripted([reply('', [{ name: 'big', arguments: {} }]), reply('ok')]);
    await runAgentLoop({ ...base, module, tools: echoTools() });
    const content = invocations[1]?.messages.at(-1)?.content ?? '';
    expect(content).to.have.length.below(MAX_TOOL_RESULT_CHARS + 100);
    expect(content).to.match(/\[truncated: 10 more characters\]$/);
  });

  it('given a module failure, when run, then the AiModuleError propagates', async () => {
    const module: AiModule = { invoke: () => Promise.reject(new AiModuleError('provider', 'quota exceeded')) };
    let caught: unknown;
    await runAgentLoop({ ...base, module, tools: null }).catch((error: unknown) => (caught = error));
    expect(caught).to.be.instanceOf(AiModuleError);
  });
});
