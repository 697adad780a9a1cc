import { api, setAccessToken } from './api.ts';

/**
 * The console is an OAuth-style client of the service (spec 5.3): GET /api/v1/auth with a
 * redirect_uri on this origin, the service's login form, back to /console/callback with `code` and
 * `state`, then POST /api/v1/token, which sets the `frontend_token` cookie. The state is random and
 * kept in sessionStorage for the round trip, so a callback the console did not start is refused.
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

/** Step 4: the code for the cookie. Returns where the user was going before signing in. */
export const completeSignIn = async (search: string): Promise<string> => {
  const params = new URLSearchParams(search);
  const saved = sessionStorage.getItem(FLOW_KEY);
  sessionStorage.removeItem(FLOW_KEY);
  const flow = saved === null ? null : (JSON.parse(saved) as { state: string; returnTo: string });
  if (flow === null || params.get('state') !== flow.state) throw new Error('This sign-in was not started here, or it was started in another tab. Sign in again.');
  const code = params.get('code');
  if (code === null) throw new Error('No code came back: with EMAIL_TOTP the code is sent by mail, and the console cannot take it. Sign in with email_totp off.');
  await api('/api/v1/token', { body: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } } });
  return flow.returnTo.startsWith('/') && !flow.returnTo.startsWith('//') ? flow.returnTo : '/';
};

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
  try {
    await api('/api/v1/logout', { method: 'POST' });
  } finally {
    setAccessToken(null);
  }
};
