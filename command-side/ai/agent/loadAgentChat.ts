import type { AccessControl } from '../../../projections/catalog/accessControl.ts';
import { AppError, forbidden } from '../../../shared/errors.ts';
import type { Laui } from '../../../shared/ids.ts';
import { resolveItemType } from '../../../shared/item-types/itemTypes.ts';
import { openSecretField } from '../../../shared/item-types/secretFields.ts';
import type { AiInvocation } from '../../../shared/ports/AiModule.ts';
import type { Principal } from '../../../shared/ports/Principal.ts';
import type { SecretBox } from '../../../shared/ports/SecretBox.ts';
import type { Collection } from '../../../shared/read-store/ReadStore.ts';
import type { ItemDoc } from '../../../shared/read-models/ItemDoc.ts';

export interface AgentChatDeps {
  items: Collection<ItemDoc>;
  access: AccessControl;
  secrets: SecretBox;
}

/** What an agent call runs with: the chat's AI module and the LLM credentials, opened. */
export interface AgentChat {
  chat: ItemDoc;
  codeblock: AiInvocation['codeblock'];
  connection: Readonly<Record<string, unknown>>;
  /** The item the credentials came from (the chat, or the connection_laui override) and its name: the history's connection_laui/name. */
  credentialsLaui: Laui;
  credentialsName: string;
}

/** Spec 4.11: a missing chat item or missing credentials is a 500 whose message says which. */
const internal = (message: string) => new AppError(500, `Internal server error: ${message}`);

const baseOf = (item: ItemDoc): string => resolveItemType(item.item_type)?.base ?? item.item_type;

const liveItem = async (items: Collection<ItemDoc>, laui: Laui): Promise<ItemDoc | null> => {
  const item = await items.get(laui);
  return item && !item.is_deleted ? item : null;
};

/** A codeblock as the module port takes it; create examples say `code`, the action route `content` (spec 2.3 note). */
const codeblockOf = (value: unknown): AiInvocation['codeblock'] => {
  if (value === null || typeof value !== 'object') return null;
  const block = value as { language?: unknown; content?: unknown; code?: unknown };
  const content = typeof block.content === 'string' && block.content.trim() !== '' ? block.content : typeof block.code === 'string' ? block.code : '';
  if (content.trim() === '') return null;
  return { language: typeof block.language === 'string' ? block.language : 'python', content };
};

const credentialsOf = (value: unknown, secrets: SecretBox): Record<string, unknown> | null => {
  const opened = openSecretField(value, secrets);
  if (opened === null || typeof opened !== 'object' || Array.isArray(opened) || Object.keys(opened).length === 0) return null;
  return opened as Record<string, unknown>;
};

/**
 * The chat item of an agent call and its credentials. The route is public (spec 5.1): an anonymous
 * caller is not checked; a caller who presented a token must have VIEW on the chat item, and on the
 * connection_laui item when one overrides the chat's connection, else 403. connection_laui may name
 * a connection item (its `content` holds the LLM credentials) or another chat item (its `connection`).
 */
export const loadAgentChat = async (
  deps: AgentChatDeps,
  principal: Principal | null,
  request: { chatLaui: Laui; connectionLaui: Laui | null },
): Promise<AgentChat> => {
  const chat = await liveItem(deps.items, request.chatLaui);
  if (chat === null || baseOf(chat) !== 'chat') throw internal(`chat item not found: ${request.chatLaui}`);
  if (principal !== null && !(await deps.access.can(principal, chat, 'VIEW'))) throw forbidden();
  const codeblock = codeblockOf(chat.codeblock);
  if (request.connectionLaui === null) {
    const connection = credentialsOf(chat.connection, deps.secrets);
    if (connection === null) throw internal(`credentials missing: chat item ${chat.laui} has no connection (api_key, model, token_limit)`);
    return { chat, codeblock, connection, credentialsLaui: chat.laui, credentialsName: chat.name };
  }
  const holder = await liveItem(deps.items, request.connectionLaui);
  if (holder === null) throw internal(`credentials missing: connection item not found: ${request.connectionLaui}`);
  if (principal !== null && !(await deps.access.can(principal, holder, 'VIEW'))) throw forbidden();
  const base = baseOf(holder);
  const connection = base === 'connection' ? credentialsOf(holder.content, deps.secrets) : base === 'chat' ? credentialsOf(holder.connection, deps.secrets) : null;
  if (connection === null) throw internal(`credentials missing: item ${holder.laui} holds no LLM credentials`);
  return { chat, codeblock, connection, credentialsLaui: holder.laui, credentialsName: holder.name };
};
