/**
 * The console's one door to the REST API (same origin). Private routes take the access token as
 * `Authorization: Bearer`: the token lives in memory only, fetched from GET /api/v1/get-mcp-token
 * (which reads the httpOnly `frontend_token` cookie), so no script-readable storage ever holds it.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(describeDetail(status, detail));
  }
}

interface ValidationEntry {
  loc?: unknown[];
  msg?: string;
}

/** The spec's `{detail}` bodies (a string, a list of entries, or an object) as one readable line. */
export const describeDetail = (status: number, detail: unknown): string => {
  if (typeof detail === 'string' && detail !== '') return detail;
  if (Array.isArray(detail)) {
    return (detail as ValidationEntry[])
      .map((entry) => `${(entry.loc ?? []).filter((part) => part !== 'body').join('.')}: ${entry.msg ?? 'invalid'}`)
      .join('; ');
  }
  if (detail !== null && typeof detail === 'object') {
    const record = detail as Record<string, unknown>;
    const text = record.message ?? record.summary ?? record.issue;
    if (typeof text === 'string') return text;
    return JSON.stringify(detail);
  }
  return `HTTP ${status}`;
};

let accessToken: string | null = null;
const signedOutListeners = new Set<() => void>();

export const setAccessToken = (token: string | null): void => {
  accessToken = token;
};

/** Called when a private route answers 401: the token expired or the session was logged out. */
export const onSignedOut = (listener: () => void): (() => void) => {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
};

export const authHeaders = (): Record<string, string> => (accessToken === null ? {} : { authorization: `Bearer ${accessToken}` });

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'DELETE';
  body?: unknown;
  signal?: AbortSignal;
}

/**
 * Read your writes: the newest log position a write of this tab answered (X-Event-Position), sent
 * with every later request as X-Read-After, so that a read served by another api process behind
 * the same address waits until that process's read models have the write (README, Operations).
 */
let lastWritePosition: bigint | null = null;

const noteWritePosition = (response: Response): void => {
  const text = response.headers.get('x-event-position');
  if (text === null || !/^\d{1,19}$/.test(text)) return;
  const position = BigInt(text);
  if (lastWritePosition === null || position > lastWritePosition) lastWritePosition = position;
};

export const readAfterHeaders = (): Record<string, string> => (lastWritePosition === null ? {} : { 'x-read-after': String(lastWritePosition) });

export const api = async <T>(path: string, options: RequestOptions = {}): Promise<T> => {
  const headers: Record<string, string> = { accept: 'application/json', ...authHeaders(), ...readAfterHeaders() };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    body: options.body === undefined ? null : JSON.stringify(options.body),
    credentials: 'same-origin',
    ...(options.signal ? { signal: options.signal } : {}),
  });
  noteWritePosition(response);
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    if (response.status === 401 && accessToken !== null) for (const listener of signedOutListeners) listener();
    const detail = parsed !== null && typeof parsed === 'object' && 'detail' in parsed ? (parsed as { detail: unknown }).detail : parsed;
    throw new ApiError(response.status, detail);
  }
  return parsed as T;
};

/** A query string from defined values only. */
export const query = (values: Record<string, string | number | boolean | undefined>): string =>
  new URLSearchParams(Object.entries(values).flatMap(([key, value]) => (value === undefined ? [] : [[key, String(value)]]))).toString();

export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
