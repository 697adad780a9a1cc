import type { ItemTypeDefinition } from '../types.ts';
import { codeBlock, defineType, int, nullableObj, nullableObjectId, nullableStr, SIBLING_UNIQUE, str } from './common.ts';

/** AI items: chats (AI module plus LLM credentials) and per-user chat histories. */

export const chatType: ItemTypeDefinition = defineType({
  type: 'chat',
  base: 'chat',
  description: 'AI chat: codeblock (the AI module) and connection (LLM credentials: api_key, model, token_limit).',
  properties: {
    codeblock: codeBlock(),
    bashblock: codeBlock(),
    connection: {
      type: 'object',
      properties: { api_key: str(), model: str(), token_limit: int(0) },
    },
  },
  uniqueFields: SIBLING_UNIQUE,
  versionedFields: ['codeblock', 'bashblock', 'connection'],
});

export const chatHistoryType: ItemTypeDefinition = defineType({
  type: 'chat_history',
  base: 'chat_history',
  description: 'Saved AI conversation of a user: messages (role, content) and the generated content.',
  properties: {
    created_item_type: nullableStr(),
    ai_provider: nullableStr(),
    connection_laui: nullableObjectId(),
    connection_name: nullableStr(),
    messages: {
      type: 'array',
      items: { type: 'object', properties: { role: str(), content: str() }, required: ['role', 'content'] },
    },
    generated_content: nullableObj(),
    // Not in spec 2.3: the chat used and the tokens the call reported (OpenAI's usage shape), recorded by the AI routes.
    chat_laui: nullableObjectId(),
    token_usage: nullableObj(),
  },
  // Conversations are many per user and often share generated names: no unique key.
  uniqueFields: [],
  // messages and generated_content grow with every turn; a revision per turn would be noise.
  versionedFields: [],
});
