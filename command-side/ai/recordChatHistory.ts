import type { EventMetadata } from '../../shared/events.ts';
import type { Laui } from '../../shared/ids.ts';
import type { Logger } from '../../shared/ports/Logger.ts';
import type { Principal } from '../../shared/ports/Principal.ts';
import type { TokenUsage } from '../../shared/ports/AiModule.ts';
import { createItem } from '../catalog/createItem.ts';
import { userFolderOf, type UserFolderDeps } from './userFolder.ts';

export interface ChatHistoryDeps extends UserFolderDeps {
  logger: Logger;
}

/** The fields of a chat_history item (spec 2.3). */
export interface ChatHistoryRecord {
  created_item_type: string | null;
  ai_provider: string | null;
  connection_laui: string | null;
  connection_name: string | null;
  messages: Array<{ role: string; content: string; name?: string }>;
  generated_content: Record<string, unknown> | null;
  /** The chat item used, and the tokens the call's module calls reported (null: none reported). */
  chat_laui?: string;
  token_usage?: TokenUsage | null;
  /** Default: the item type and the first words of the conversation's first user message. */
  name?: string;
}

const MAX_NAME = 80;

const nameOf = (record: ChatHistoryRecord): string => {
  const first = record.messages.find((message) => message.role === 'user')?.content ?? '';
  const words = first.replace(/\s+/g, ' ').trim();
  const name = `${record.created_item_type ?? 'chat'}: ${words === '' ? 'conversation' : words}`;
  return name.length > MAX_NAME ? `${name.slice(0, MAX_NAME - 1)}…` : name;
};

/**
 * Records one AI call (/ai/generate, /ai/agent) as a `chat_history` item in the caller's user
 * folder (userFolder.ts), through the catalog's create (schema, hierarchy, rights), and waits until
 * the read models have it. An anonymous call (no token: the AI routes are public, spec 5.1) is not
 * recorded here: there is no user whose folder it would belong to, and a chat's folder cannot hold it
 * (spec 2.2); its log line (aiCallLog.ts) is its record. Never throws: the call's answer does not depend on its record; a failure is logged
 * (category API) and gives null.
 */
export const recordChatHistory = async (
  deps: ChatHistoryDeps,
  principal: Principal | null,
  record: ChatHistoryRecord,
  metadata: EventMetadata,
): Promise<{ laui: Laui; folderLaui: Laui } | null> => {
  if (principal === null) return null;
  try {
    const folderLaui = await userFolderOf(deps, principal, metadata);
    const { name, ...fields } = record;
    const created = await createItem(deps, principal, { item_type: 'chat_history', name: name ?? nameOf(record), parent_laui: folderLaui, ...fields }, metadata);
    await deps.readModels.waitFor(created.position, deps.readYourWritesTimeoutMs);
    return { laui: created.laui, folderLaui };
  } catch (error) {
    deps.logger.log({ level: 'error', category: 'API', message: `Recording the chat history of user ${principal.laui} failed: ${error instanceof Error ? error.message : String(error)}` });
    return null;
  }
};
