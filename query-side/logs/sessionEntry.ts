/**
 * A line of a session file as the session's entry, or null when it belongs to another session (the
 * file of one second holds every session that started in it) or is no JSON object (a line cut by a
 * crash must not end the reading). The substring test first: most lines of a busy second are other
 * sessions', and it costs a fraction of a parse.
 */
export const sessionEntry = (line: string, sessionId: string): Record<string, unknown> | null => {
  if (!line.includes(sessionId)) return null;
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return null;
  }
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return null;
  return (entry as Record<string, unknown>).session_id === sessionId ? (entry as Record<string, unknown>) : null;
};
