/** What the login form shows again after a refused attempt (POST /api/v1/login from a browser). */
export interface LoginPageState {
  /** Why the last attempt was refused: shown above the fields. */
  error?: string;
  /** The username of the refused attempt, kept in its field. */
  username?: string;
}

/** The page is built from strings: every value that came from a request is escaped. */
const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] as string);

/** The login form of step 2 of the login flow: a plain HTML form, no script, posting to /login. */
export const loginPage = (state: LoginPageState = {}): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${state.error ? 'Sign in failed' : 'Sign in'}</title>
<style>
  body { font-family: system-ui, sans-serif; background: #f4f5f7; display: grid; place-items: center; min-height: 100vh; margin: 0; }
  form { background: #fff; padding: 2rem; border-radius: 8px; box-shadow: 0 2px 12px rgba(0,0,0,.08); width: 20rem; }
  h1 { font-size: 1.25rem; margin: 0 0 1.5rem; }
  label { display: block; font-size: .875rem; margin-bottom: .25rem; }
  input { width: 100%; box-sizing: border-box; padding: .5rem; margin-bottom: 1rem; border: 1px solid #c8ccd2; border-radius: 4px; }
  button { width: 100%; padding: .6rem; border: 0; border-radius: 4px; background: #2456d8; color: #fff; font-size: 1rem; cursor: pointer; }
  .error { margin: 0 0 1rem; padding: .5rem .75rem; border-left: 4px solid #b3261e; background: #fdecea; color: #7a1a14; font-size: .9rem; }
</style>
</head>
<body>
<form method="post" action="/api/v1/login">
  <h1>Sign in to the pipeline orchestrator</h1>
${state.error ? `  <p class="error" role="alert" id="login-error">${escapeHtml(state.error)}</p>\n` : ''}  <label for="username">Username</label>
  <input id="username" name="username" autocomplete="username" required${state.username ? ` value="${escapeHtml(state.username)}"` : ' autofocus'}>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required${state.username ? ' autofocus' : ''}${state.error ? ' aria-describedby="login-error"' : ''}>
  <button type="submit">Sign in</button>
</form>
</body>
</html>
`;
