import { open } from 'node:fs/promises';
import { ForwardLines } from './ForwardLines.ts';
import { sessionEntry } from './sessionEntry.ts';

export interface SessionContentQuery {
  level?: string;
  category?: string;
  page: number;
  per_page: number;
}

export interface SessionPage {
  items: Array<Record<string, unknown>>;
  pagination: { current_page: number; per_page: number; has_next: boolean };
}

const matches = (value: unknown, wanted: string | undefined): boolean =>
  wanted === undefined || (typeof value === 'string' && value.toLowerCase() === wanted.toLowerCase());

/**
 * GET /logs/session/{session_id}/content: one page of the session's entries in the order written,
 * filtered by level and category (each compared without regard to case: `ERROR` finds `error`).
 * The file is read forwards and the reading stops once the page and one entry more (has_next) are
 * found, so early pages of a long session cost a part of the file; only the page is kept. A
 * session with no file (none yet, or an id that names none) is an empty page: the spec gives this
 * route a 200 only.
 */
export const readSessionPage = async (file: string | null, sessionId: string, query: SessionContentQuery): Promise<SessionPage> => {
  const pagination = (hasNext: boolean) => ({ current_page: query.page, per_page: query.per_page, has_next: hasNext });
  if (file === null) return { items: [], pagination: pagination(false) };
  const handle = await open(file, 'r').catch(() => null);
  if (handle === null) return { items: [], pagination: pagination(false) };
  try {
    const skip = (query.page - 1) * query.per_page;
    const items: Array<Record<string, unknown>> = [];
    let matched = 0;
    for await (const line of new ForwardLines().read(handle)) {
      const entry = sessionEntry(line, sessionId);
      if (entry === null || !matches(entry.level, query.level) || !matches(entry.category, query.category)) continue;
      matched += 1;
      if (matched <= skip) continue;
      if (items.length === query.per_page) return { items, pagination: pagination(true) };
      items.push(entry);
    }
    return { items, pagination: pagination(false) };
  } finally {
    await handle.close();
  }
};
