/** How a client shows the agent's message (spec 4.11, AgentResponse.content_type). */
export type AgentContentType = 'text' | 'html' | 'markdown';

const CONTENT_TYPES: ReadonlySet<string> = new Set(['text', 'html', 'markdown']);
const MARKER = /\[content_type:\s*([A-Za-z_-]*)\s*\]/gi;

/**
 * Reads the `[content_type:X]` marker of a reply (the system prompt asks the model for one) and
 * removes every such marker from the message. The first marker naming text, html or markdown
 * (any case) wins; without one, or with another value, the type is `text`. The message is trimmed
 * when a marker was removed: the marker usually sat on a line of its own.
 */
export const parseContentType = (reply: string): { message: string; contentType: AgentContentType } => {
  const values = [...reply.matchAll(MARKER)].map((match) => (match[1] ?? '').toLowerCase());
  if (values.length === 0) return { message: reply, contentType: 'text' };
  const named = values.find((value) => CONTENT_TYPES.has(value));
  return { message: reply.replace(MARKER, '').trim(), contentType: (named ?? 'text') as AgentContentType };
};
