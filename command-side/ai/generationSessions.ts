/** What a generation session (session_id) keeps between calls. */
export interface GenerationSession {
  /** The conversation so far (earlier messages, the prompts and the replies), without the system prompt. */
  messages: Array<{ role: string; content: string }>;
  /** The last generated_content: refined by the next call when it sends none. */
  generatedContent: Record<string, unknown> | null;
}

/**
 * The sessions of /ai/generate (spec 4.11 `session_id`, `temp_file_path`), by key (sessionKey): a
 * call with a session_id continues the session (its conversation and last output when the call
 * sends none) and its generated module (the codeblock) is kept in the session's temporary file,
 * rewritten in place.
 */
export interface GenerationSessions {
  get(key: string): GenerationSession | undefined;
  /** Keeps the session; writes `module` (a complete codeblock) to the session's file and returns its path, else null. */
  put(key: string, session: GenerationSession, module: { language: string; code: string } | null): Promise<string | null>;
}

/**
 * A session belongs to its caller and its chat: session ids are ObjectIds, guessable from any
 * other, so the id alone must not let one caller continue (and so read back) another's
 * conversation. Anonymous callers share one namespace per chat: their calls keep a session's file
 * but never continue a session (sessionOf).
 */
export const sessionKey = (callerLaui: string | null, chatLaui: string, sessionId: string): string => `${callerLaui ?? 'anonymous'}/${chatLaui}/${sessionId}`;
