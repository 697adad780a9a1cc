import { detail, empty, invalid, json, objectOf, type ResponseDoc, type RouteDocs } from '../../shared/http/routeDocs.ts';
import { authQuerySchema, loginSchema, redirectQuerySchema, tokenSchema } from './routes.ts';

const redirect = (description: string, cookies: string) => ({ description, headers: { Location: 'Where to go next', 'Set-Cookie': cookies } });
const tooMany = detail('Too many failed attempts from this address or for this user; `Retry-After` says when to try again');

/** A browser that posted the form (Accept: text/html) gets the form again under the same status, the reason above it. */
const orForm = (response: ResponseDoc): ResponseDoc => ({
  ...response,
  description: `${response.description}. A browser (Accept: text/html) gets the login form again, with the reason`,
  alternatives: { 'text/html': { type: 'string' } },
});

/** The OpenAPI docs of authRoutes (spec 4.1 and 5.3). */
export const authDocs: RouteDocs = {
  tag: 'Auth',
  description: 'The OAuth-style login flow: /auth, the login form, /login, /redirect-with-code, then /token for the access token.',
  auth: 'public',
  schemas: { LoginForm: loginSchema, AuthQuery: authQuerySchema, TokenRequest: tokenSchema },
  routes: [
    {
      method: 'POST',
      path: '/api/v1/login',
      summary: 'Sign in with a username and password',
      body: { schema: loginSchema, contentType: 'application/x-www-form-urlencoded' },
      responses: {
        303: redirect('Signed in: on to /api/v1/redirect-with-code?user_laui=<laui>', 'session (the login session)'),
        401: orForm(detail('Invalid username or password')),
        422: orForm(invalid('A field is missing or not a string')),
        429: orForm({ ...tooMany, headers: { 'Retry-After': 'Seconds to wait' } }),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/auth',
      summary: 'Start the login flow of a client',
      description: 'Sets the oauth_flow cookie. With a live session cookie, on to /redirect-with-code; without, to the login page /public/login.',
      params: { query: authQuerySchema },
      responses: {
        303: redirect('To /api/v1/redirect-with-code or to /public/login', 'oauth_flow (client_id, redirect_uri, state; 10 minutes)'),
        400: detail('Invalid argument: redirect_uri is not allowed'),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/redirect-with-code',
      summary: "Send the signed-in user back to the client's redirect_uri with a code",
      description:
        "Needs the oauth_flow cookie (403 with an empty body without it) and the session cookie of that user. With EMAIL_TOTP the code goes by mail to the user's address (SMTP_URL) and only state is sent; the redirect answers once the mail server took the mail.",
      params: { query: redirectQuerySchema, cookie: { type: 'object', properties: { oauth_flow: { type: 'string' }, session: { type: 'string' } } } },
      responses: {
        303: { description: 'To <redirect_uri>?state=<state>&code=<hex>', headers: { Location: "The client's redirect_uri" } },
        400: detail('Invalid argument: redirect_uri is not allowed'),
        401: detail('User not authenticated: no session of that user'),
        403: empty('No oauth_flow cookie (empty body)'),
        429: detail('EMAIL_TOTP: Too many sign-in codes were mailed to this address, try again later (MAIL_MAX_PER_ADDRESS_PER_HOUR; with Retry-After)'),
        503: detail('EMAIL_TOTP: The sign-in code could not be sent by mail: the mail server did not take it. Try again in a minute (with Retry-After)'),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/check_frontend_token_present',
      summary: 'Whether the browser holds the frontend_token cookie',
      params: { cookie: { type: 'object', properties: { frontend_token: { type: 'string' } }, required: ['frontend_token'] } },
      responses: { 200: empty('The cookie is there (empty body)') },
    },
    {
      method: 'POST',
      path: '/api/v1/token',
      summary: 'Trade a code or a refresh token for the access token',
      description:
        'grant_type authorization_code: credentials {code, provider}; refresh_token: credentials {token_string} (64 hex). Sets the frontend_token cookie (24 hours) and a refresh_token cookie.',
      body: { schema: tokenSchema },
      responses: {
        200: json('The access token is in the frontend_token cookie', objectOf({ must_change_password: { type: 'boolean' } }), { 'Set-Cookie': 'frontend_token, refresh_token' }),
        400: detail('The credentials do not fit the grant type, or an unknown provider'),
        401: detail('Invalid authorization code'),
        429: { ...tooMany, headers: { 'Retry-After': 'Seconds to wait' } },
      },
    },
    {
      method: 'GET',
      path: '/api/v1/get-mcp-token',
      summary: 'The access token of the frontend_token cookie, for MCP clients',
      auth: 'accessCookie',
      responses: {
        200: json('The token', objectOf({ access_token: { type: 'string' } })),
        401: detail('Unauthorized (no cookie) or Invalid token'),
      },
    },
    {
      method: 'POST',
      path: '/api/v1/logout',
      summary: 'End the sessions this request holds and delete the cookies',
      responses: { 200: json('The JSON string "logged out"', { type: 'string', const: 'logged out' }, { 'Set-Cookie': 'frontend_token, oauth_flow, session and refresh_token, expired' }) },
    },
    {
      method: 'GET',
      path: '/public/login',
      summary: 'The login form (HTML)',
      responses: { 200: { description: 'A form posting to /api/v1/login', contentType: 'text/html', schema: { type: 'string' } } },
    },
  ],
};
