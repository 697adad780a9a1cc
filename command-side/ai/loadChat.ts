import { AppError, forbidden, unauthorized } from '../../shared/errors.ts';
import type { AiInvocation } from '../../shared/ports/AiModule.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { SecretBox } from '../../shared/ports/SecretBox.ts';
import type { Collection } from '../../shared/read-store/ReadStore.ts';
import type { ItemDoc } from '../../shared/read-models/ItemDoc.ts';
import { resolveItemType } from '../../shared/item-types/itemTypes.ts';
import { openSecretField } from '../../shared/item-types/secretFields.ts';
import type { AccessControl } from '../../projections/catalog/accessControl.ts';
import { aiModuleOf, missingLlmCredentials } from './aiModuleOf.ts';

export interface LoadChatDeps {
  items: Collection<ItemDoc>;
  access: AccessControl;
  secrets: SecretBox;
}

/** A chat item ready to be invoked: its module, its (or the override's) decrypted LLM connection. */
export interface LoadedChat {
  chat: ItemDoc;
  codeblock: AiInvocation['codeblock'];
  connection: Record<string, unknown>;
  /** The item whose credentials are used (the chat itself, or connection_laui) and its name: chat_history's connection_laui/connection_name. */
  connectionLaui: string;
  connectionName: string;
}

/** The spec's 500s of 4.11 (a chat item or credentials missing): `Internal server error: <which>`. */
export const internalError = (message: string): AppError => new AppError(500, `Internal server error: ${message}`);

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const baseOf = (doc: ItemDoc): string | undefined => resolveItemType(doc.item_type)?.base;

/**
 * VIEW on an item for whoever calls: a known caller's own rights (403 without), an anonymous
 * caller's are what the item grants EVERYONE (401 without: signing in may help). An anonymous
 * caller learns nothing of an item it may not use, not even whether it exists: 401 as well.
 */
const requireUse = async (deps: LoadChatDeps, caller: Principal | null, item: ItemDoc | null, missing: () => AppError): Promise<ItemDoc> => {
  if (caller === null) {
    if (item === null || !(await deps.access.canAnonymously(item, 'VIEW'))) throw unauthorized();
    return item;
  }
  if (item === null) throw missing();
  if (!(await deps.access.can(caller, item, 'VIEW'))) throw forbidden();
  return item;
};

/**
 * Loads the chat item of /ai/generate and /ai/agent (spec 4.11) with its LLM connection opened:
 * - chat_laui must name a live `chat` item, else 500 `Internal server error: chat item not found: <laui>`;
 * - a known caller (a token or frontend_token cookie was sent) needs VIEW on it, else 403; an
 *   anonymous caller may use it only when it is shared with everyone (EVERYONE a viewer of it or of a
 *   folder above), else 401 (a missing chat too): the chat's provider key is its owner's;
 * - connection_laui overrides the chat's connection: a `connection` item's content or another chat's
 *   connection. The override's decrypted credentials reach the chat's module, which may be anybody's
 *   code: so it needs VIEW on that item by the same rule (403 known, 401 anonymous), as an action's
 *   connection does;
 * - no connection at all, or (built-in module) no `model` / no `api_key` without a `base_url`: 500
 *   naming what is missing. A chat's own module gets its connection as it is.
 */
export const loadChat = async (deps: LoadChatDeps, caller: Principal | null, request: { chat_laui: string; connection_laui?: string | null }): Promise<LoadedChat> => {
  const found = await deps.items.get(request.chat_laui);
  const live = found && !found.is_deleted && baseOf(found) === 'chat' ? found : null;
  const chat = await requireUse(deps, caller, live, () => internalError(`chat item not found: ${request.chat_laui}`));
  let source: ItemDoc = chat;
  let sealed: unknown = chat.connection;
  if (request.connection_laui) {
    const override = await deps.items.get(request.connection_laui);
    const usable = override && !override.is_deleted && (baseOf(override) === 'connection' || baseOf(override) === 'chat') ? override : null;
    const item = await requireUse(deps, caller, usable, () => internalError(`connection item not found: ${request.connection_laui}`));
    source = item;
    sealed = baseOf(item) === 'connection' ? item.content : item.connection;
  }
  const connection = sealed === undefined || sealed === null ? null : openSecretField(sealed, deps.secrets);
  const where = source === chat ? `chat ${chat.laui}` : `${source.item_type} ${source.laui}`;
  if (!isObject(connection)) throw internalError(`LLM credentials missing: ${where} has no connection`);
  const codeblock = aiModuleOf(chat.codeblock);
  if (codeblock === null) {
    const missing = missingLlmCredentials(connection);
    if (missing.length > 0) throw internalError(`LLM credentials missing in the connection of ${where}: ${missing.join(', ')}`);
  }
  return { chat, codeblock, connection, connectionLaui: source.laui, connectionName: source.name };
};
