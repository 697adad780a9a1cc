/** The login form of step 2 of the login flow: a plain HTML form, no script, posting to /login. */
export const loginPage = (): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in</title>
<style>
  body { font-family: system-ui, sans-serif; background: #f4f5f7; display: grid; place-items: center; min-height: 100vh; margin: 0; }
  form { background: #fff; padding: 2rem; border-radius: 8px; box-shadow: 0 2px 12px rgba(0,0,0,.08); width: 20rem; }
  h1 { font-size: 1.25rem; margin: 0 0 1.5rem; }
  label { display: block; font-size: .875rem; margin-bottom: .25rem; }
  input { width: 100%; box-sizing: border-box; padding: .5rem; margin-bottom: 1rem; border: 1px solid #c8ccd2; border-radius: 4px; }
  button { width: 100%; padding: .6rem; border: 0; border-radius: 4px; background: #2456d8; color: #fff; font-size: 1rem; cursor: pointer; }
</style>
</head>
<body>
<form method="post" action="/api/v1/login">
  <h1>Sign in to the pipeline orchestrator</h1>
  <label for="username">Username</label>
  <input id="username" name="username" autocomplete="username" required autofocus>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit">Sign in</button>
</form>
</body>
</html>
`;
