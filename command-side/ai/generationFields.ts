/**
 * What /ai/generate produces per item type (spec 4.11). The 422 of a bad item_type lists the
 * allowed values as the spec's error row does (action, operator, payload, chat, agent); the body
 * table's `generate` has no required fields in the spec, so it is not accepted.
 */
export const GENERATE_ITEM_TYPES = ['action', 'operator', 'payload', 'chat', 'agent'] as const;
export type GenerateItemType = (typeof GENERATE_ITEM_TYPES)[number];

export type GeneratedField = 'codeblock' | 'bashblock' | 'payload' | 'connection';

/** Required generated fields by item type (spec 4.11), in the order the reply lists them. */
export const REQUIRED_FIELDS: Readonly<Record<GenerateItemType, ReadonlyArray<GeneratedField>>> = {
  action: ['codeblock', 'bashblock'],
  agent: ['codeblock', 'bashblock'],
  chat: ['codeblock', 'bashblock'],
  operator: ['codeblock', 'bashblock', 'payload', 'connection'],
  payload: ['payload'],
};

/** Functions a generated codeblock must define; validation runs for these types only (spec 4.11). */
export const REQUIRED_FUNCTIONS: Readonly<Partial<Record<GenerateItemType, ReadonlyArray<string>>>> = {
  operator: ['run', 'initialize', 'check_completion', 'finish'],
  action: ['run'],
};

/** The catalog item type whose schema the prompt carries: an agent is a chat item's AI module. */
export const CATALOG_TYPE: Readonly<Record<GenerateItemType, string>> = {
  action: 'action',
  operator: 'operator',
  payload: 'payload',
  chat: 'chat',
  agent: 'chat',
};

/** One field of AIResponse.generated_content (spec 2.10). */
export interface GeneratedContent {
  completed: boolean;
  content: string;
  language: string;
}
