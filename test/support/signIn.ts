import { HttpClient } from './HttpClient.ts';

/** The browser login flow of spec 5.3 against the service at `baseUrl`; returns the access token and the client with its cookies. */
export const signIn = async (baseUrl: string, username: string, password: string): Promise<{ token: string; client: HttpClient }> => {
  const client = new HttpClient(baseUrl);
  await client.get('/api/v1/auth?client_id=cli&redirect_uri=http://localhost/cb&state=s1');
  const login = await client.post('/api/v1/login', { form: { username, password } });
  if (login.status !== 303) throw new Error(`login failed: ${login.status} ${login.text}`);
  const redirect = await client.get(login.headers.get('location') ?? '');
  const code = new URL(redirect.headers.get('location') ?? '').searchParams.get('code');
  const token = await client.post('/api/v1/token', { json: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } } });
  if (token.status !== 200) throw new Error(`token failed: ${token.status} ${token.text}`);
  return { token: client.jar.get('frontend_token') ?? '', client };
};
