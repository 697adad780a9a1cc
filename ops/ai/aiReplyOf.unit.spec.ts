import { expect } from 'chai';
import { AiModuleError } from '../../shared/ports/AiModule.ts';
import { aiReplyOf } from './aiReplyOf.ts';
import { isTokenLimitError } from './isTokenLimitError.ts';

describe('AI module: what a module returned (aiReplyOf)', () => {
  it('given a string, when mapped, then it is the reply with no finish_reason and no tool calls', () => {
    expect(aiReplyOf('hello')).to.deep.equal({ content: 'hello', finish_reason: null, tool_calls: [] });
  });

  it('given an object, when mapped, then content, finish_reason and tool calls (object or JSON arguments, OpenAI form too) are kept', () => {
    expect(
      aiReplyOf({
        content: null,
        finish_reason: 'tool_calls',
        tool_calls: [{ name: 'catalog_get', arguments: { item_laui: 'x' } }, { function: { name: 'task_state', arguments: '{"a":1}' } }, { name: 'bare' }],
      }),
    ).to.deep.equal({
      content: '',
      finish_reason: 'tool_calls',
      tool_calls: [
        { name: 'catalog_get', arguments: { item_laui: 'x' } },
        { name: 'task_state', arguments: '{"a":1}' },
        { name: 'bare', arguments: {} },
      ],
    });
  });

  it('given an object with OpenAI\'s usage, when mapped, then the token counts are kept (a missing total is the sum; no usage, no key)', () => {
    expect(aiReplyOf({ content: 'x', usage: { prompt_tokens: 7, completion_tokens: 3 } })).to.deep.equal({
      content: 'x',
      finish_reason: null,
      tool_calls: [],
      usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
    });
    expect(aiReplyOf({ content: 'x', usage: 'many' })).to.deep.equal({ content: 'x', finish_reason: null, tool_calls: [] });
  });

  it('given anything else, when mapped, then a module error naming the contract', () => {
    for (const value of [42, null, ['x'], { content: 1 }, { finish_reason: 3 }, { tool_calls: 'x' }, { tool_calls: [{}] }]) {
      expect(() => aiReplyOf(value), JSON.stringify(value)).to.throw(AiModuleError, /the AI module must return a string or an object/);
    }
  });
});

describe('AI module: token and context limit refusals (isTokenLimitError)', () => {
  it('given the refusals of OpenAI, vLLM and llama.cpp, when classified, then each is a token limit; a rate limit and an auth error are not', () => {
    expect(isTokenLimitError({ message: 'x', code: 'context_length_exceeded', status: 400 })).to.equal(true);
    expect(isTokenLimitError({ message: "This model's maximum context length is 4096 tokens." })).to.equal(true);
    expect(isTokenLimitError({ message: 'the request exceeds the available context size, try increasing it', type: 'exceed_context_size_error' })).to.equal(true);
    expect(isTokenLimitError({ message: 'Rate limit reached for tokens per min (TPM)', status: 429 })).to.equal(false);
    expect(isTokenLimitError({ message: 'Incorrect API key provided', status: 401 })).to.equal(false);
  });
});
