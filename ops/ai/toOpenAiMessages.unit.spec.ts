import { expect } from 'chai';
import { toOpenAiMessages } from './toOpenAiMessages.ts';

describe('built-in AI module: messages for the chat completions API (toOpenAiMessages)', () => {
  it('given no tool messages, when converted, then roles and contents pass unchanged', () => {
    expect(toOpenAiMessages([{ role: 'system', content: 's' }, { role: 'user', content: 'u' }, { role: 'assistant', content: 'a' }])).to.deep.equal([
      { role: 'system', content: 's' },
      { role: 'user', content: 'u' },
      { role: 'assistant', content: 'a' },
    ]);
  });

  it('given tool results after an assistant turn, when converted, then the turn carries the calls (remembered ids and arguments first) and each result answers one', () => {
    const converted = toOpenAiMessages(
      [
        { role: 'user', content: 'u' },
        { role: 'assistant', content: '' },
        { role: 'tool', name: 'catalog_get', content: '{"item": 1}' },
        { role: 'tool', name: 'unknown_tool', content: 'error: unknown tool' },
        { role: 'user', content: 'again' },
      ],
      [{ id: 'call_abc', name: 'catalog_get', arguments: '{"item_laui":"x"}' }],
    );
    expect(converted).to.deep.equal([
      { role: 'user', content: 'u' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'call_abc', type: 'function', function: { name: 'catalog_get', arguments: '{"item_laui":"x"}' } },
          { id: 'call_2', type: 'function', function: { name: 'unknown_tool', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_abc', content: '{"item": 1}' },
      { role: 'tool', tool_call_id: 'call_2', content: 'error: unknown tool' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('given tool results with no assistant turn before them, when converted, then one is inserted', () => {
    expect(toOpenAiMessages([{ role: 'user', content: 'u' }, { role: 'tool', name: 't', content: 'r' }])).to.deep.equal([
      { role: 'user', content: 'u' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 't', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'r' },
    ]);
  });
});
