import { AppError } from '../../../shared/errors.ts';
import type { EventMetadata } from '../../../shared/events.ts';
import type { Position } from '../../../shared/event-store/EventStore.ts';
import type { Laui } from '../../../shared/ids.ts';
import type { AiMessage } from '../../../shared/ports/AiModule.ts';
import type { Principal } from '../../../shared/ports/Principal.ts';
import { releaseUniqueKey } from '../../kernel/uniqueKey.ts';
import type { CatalogDeps } from '../../catalog/catalogDeps.ts';
import { createItem, UNIQUE_KEY_EXISTS } from '../../catalog/createItem.ts';
import { itemStream } from '../../catalog/item.ts';
import { itemHoldingKey } from '../../catalog/keyHolder.ts';

export interface ChatHistoryDeps extends CatalogDeps {
  /** Read-your-writes: the folder is read back as the history's parent. */
  settle(position: Position | null): Promise<void>;
}

/** The reservation that makes a user's folder one per user, across processes (root names carry no unique key). */
export const userFolderKey = (userLaui: Laui): string => `user-folder:${userLaui}`;

const ENSURE_ATTEMPTS = 8;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isKeyTaken = (error: unknown): boolean => error instanceof AppError && error.status === 409 && error.detail === UNIQUE_KEY_EXISTS;

/**
 * The caller's user folder (spec 2.2: folder.user holds chat_history): a root `folder.user` named
 * after the user, created by and owned by them on first use, one per user (userFolderKey). A folder
 * the user deleted is replaced by a new one.
 */
export const ensureUserFolder = async (deps: ChatHistoryDeps, principal: Principal, metadata: EventMetadata): Promise<Laui> => {
  const key = userFolderKey(principal.laui);
  for (let attempt = 1; ; attempt += 1) {
    const holder = await itemHoldingKey(deps.eventStore, key);
    if (holder !== null && holder.state.status === 'live') {
      await deps.settle(holder.position);
      return holder.laui;
    }
    if (holder !== null && holder.state.status !== 'none') await releaseUniqueKey(deps.eventStore, { key, ownerStream: itemStream(holder.laui), metadata });
    if (holder === null || holder.state.status !== 'none') {
      try {
        const created = await createItem(deps, principal, { item_type: 'folder.user', name: principal.username, is_root: true }, metadata, { uniqueKey: key });
        await deps.settle(created.position);
        return created.laui;
      } catch (error) {
        if (!isKeyTaken(error)) throw error;
      }
    }
    // Another request of this user is creating it: its creation shows up in a moment.
    if (attempt >= ENSURE_ATTEMPTS) throw new AppError(503, 'write_conflict');
    await sleep(10 * 2 ** attempt * Math.random());
  }
};

export interface AgentHistoryEntry {
  prompt: string;
  /** The conversation as the caller sees it: earlier messages, the prompt, the reply (no system prompt, no tool traffic). */
  messages: AiMessage[];
  credentialsLaui: Laui;
  credentialsName: string;
  chatLaui: Laui;
  toolCallsMade: string[];
  contentType: string;
  iterations: number;
}

const historyName = (prompt: string): string => {
  const line = prompt.replace(/\s+/g, ' ').trim();
  return `Agent: ${line.length > 60 ? `${line.slice(0, 60)}…` : line || 'conversation'}`;
};

/**
 * Records one POST /ai/agent call as a `chat_history` item (spec 2.3 fields) in the caller's user
 * folder: created_item_type `agent`, connection_laui/name of the item whose credentials were used,
 * the messages, and generated_content with what the loop did. The generate route records its own
 * calls the same way (one function to fold both into, named for the agent here).
 */
export const recordAgentChatHistory = async (deps: ChatHistoryDeps, principal: Principal, entry: AgentHistoryEntry, metadata: EventMetadata): Promise<Laui> => {
  const folder = await ensureUserFolder(deps, principal, metadata);
  const created = await createItem(
    deps,
    principal,
    {
      item_type: 'chat_history',
      name: historyName(entry.prompt),
      parent_laui: folder,
      created_item_type: 'agent',
      ai_provider: null,
      connection_laui: entry.credentialsLaui,
      connection_name: entry.credentialsName,
      messages: entry.messages.map((message) => ({ role: message.role, content: message.content, ...(message.name === undefined ? {} : { name: message.name }) })),
      generated_content: { chat_laui: entry.chatLaui, tool_calls_made: entry.toolCallsMade, content_type: entry.contentType, iterations: entry.iterations },
    },
    metadata,
  );
  await deps.settle(created.position);
  return created.laui;
};
