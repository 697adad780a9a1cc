import { api, setAccessToken } from './api.ts';

/**
 * The console is an OAuth-style client of the service (spec 5.3): GET /api/v1/auth with a
 * redirect_uri on this origin, the service's login form, back to /console/callback with `code` and
 * `state`, then POST /api/v1/token, which sets the `frontend_token` cookie. With EMAIL_TOTP the
 * callback brings the state alone and the code comes by mail: the sign-in page asks for it. The
 * state is random and kept in sessionStorage for the round trip, so a callback the console did not
 * start is refused.
 */
export const CLIENT_ID = 'console';
export const CALLBACK_PATH = '/console/callback';
const FLOW_KEY = 'console.signIn';

export interface Profile {
  laui: string;
  username: string;
  email: string;
  must_change_password: boolean;
}

const randomState = (): string => Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, '0')).join('');

export const startSignIn = (returnTo: string): void => {
  const state = randomState();
  sessionStorage.setItem(FLOW_KEY, JSON.stringify({ state, returnTo }));
  const redirectUri = new URL(CALLBACK_PATH, window.location.origin).href;
  const params = new URLSearchParams({ client_id: CLIENT_ID, redirect_uri: redirectUri, state });
  window.location.assign(`/api/v1/auth?${params.toString()}`);
};

/**
 * Where the console goes after a sign-in: the page the user was on, on this origin (never `//host`).
 * While a mailed code is awaited (EMAIL_TOTP) the flow stays in sessionStorage, so a reload of the
 * tab (or a trip to the mailbox in it) comes back to the code field.
 */
const AWAITING_KEY = 'console.awaitingMailedCode';
const safeReturn = (returnTo: string): string => (returnTo.startsWith('/') && !returnTo.startsWith('//') && returnTo !== CALLBACK_PATH ? returnTo : '/');

/** Step 3's answer at the callback: the code, or null when it went by mail (EMAIL_TOTP); and where to go next. */
export interface SignInCallback {
  code: string | null;
  returnTo: string;
}

export const readCallback = (search: string): SignInCallback => {
  const params = new URLSearchParams(search);
  const saved = sessionStorage.getItem(FLOW_KEY);
  sessionStorage.removeItem(FLOW_KEY);
  const flow = saved === null ? null : (JSON.parse(saved) as { state: string; returnTo: string });
  if (flow === null || params.get('state') !== flow.state) throw new Error('This sign-in was not started here, or it was started in another tab. Sign in again.');
  const returnTo = safeReturn(flow.returnTo);
  const code = params.get('code');
  if (code === null) sessionStorage.setItem(AWAITING_KEY, returnTo);
  return { code, returnTo };
};

/** Where a mailed code is awaited for (the page to go to once it is entered), or null. */
export const awaitingMailedCode = (): string | null => sessionStorage.getItem(AWAITING_KEY);

/** Step 4: the code (the callback's, or the one the user copied from the mail) for the `frontend_token` cookie. */
export const redeemCode = async (code: string): Promise<void> => {
  // Copied from a mail: spaces or line breaks may come with it, and hex is case-insensitive to a reader.
  const cleaned = code.replace(/\s+/g, '').toLowerCase();
  await api('/api/v1/token', { body: { grant_type: 'authorization_code', credentials: { code: cleaned, provider: 'local' } } });
  sessionStorage.removeItem(AWAITING_KEY);
};

/** Leaves the code field: the user starts over (a new code is mailed) or gave up. */
export const stopAwaitingMailedCode = (): void => sessionStorage.removeItem(AWAITING_KEY);

/** The access token of the browser's `frontend_token` cookie, or null when there is none (or it expired). */
export const resumeSession = async (): Promise<Profile | null> => {
  try {
    const { access_token } = await api<{ access_token: string }>('/api/v1/get-mcp-token');
    setAccessToken(access_token);
    return await api<Profile>('/api/v1/user/me');
  } catch {
    setAccessToken(null);
    return null;
  }
};

export const signOut = async (): Promise<void> => {
  stopAwaitingMailedCode();
  try {
    await api('/api/v1/logout', { method: 'POST' });
  } finally {
    setAccessToken(null);
  }
};
