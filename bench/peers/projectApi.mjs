// The peers harness's client for this service (its sys-project.mjs imports `./projectApi.mjs`):
// copy this file next to it. `makeApi(base)` gives { api, login, raw, stats, close }:
// - login(username, password): the README's sign-in (authorize, login form, code, token), cookies
//   kept by name and redirects followed by hand;
// - api(path, body?): GET without a body, POST with one, under /api/v1, the bearer token only;
//   JSON back, an Error for a 4xx/5xx; stats counts the GETs and POSTs (the harness's polls per job);
// - raw(method, path): the bare answer ({status, headers, text}), for /healthz.
// node:http with one keep-alive agent: fetch cost the client ~3x the CPU per call (1.65 against
// 0.55 ms per job), which the harness counts on the client's side.
import { Buffer } from 'node:buffer';
import http from 'node:http';
import { URL, URLSearchParams } from 'node:url';

export function makeApi(base) {
  const url = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const stats = { gets: 0, posts: 0 };
  const jar = new Map();
  let token = null;

  const request = (method, path, { body, form, headers = {} } = {}) =>
    new Promise((resolve, reject) => {
      const sent = { ...headers };
      let payload;
      if (form !== undefined) {
        payload = new URLSearchParams(form).toString();
        sent['content-type'] = 'application/x-www-form-urlencoded';
      } else if (body !== undefined) {
        payload = JSON.stringify(body);
        sent['content-type'] = 'application/json';
      }
      if (payload !== undefined) sent['content-length'] = Buffer.byteLength(payload);
      const req = http.request({ host: url.hostname, port: url.port, method, path, headers: sent, agent }, (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });

  const cookies = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const keep = (res) => {
    for (const cookie of [].concat(res.headers['set-cookie'] ?? [])) {
      const [pair] = cookie.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return res;
  };
  const pathOf = (location) => {
    const target = new URL(location, base);
    return target.pathname + target.search;
  };

  const login = async (username, password) => {
    keep(await request('GET', '/api/v1/auth?client_id=cli&redirect_uri=http://localhost/cb&state=s', { headers: { cookie: cookies() } }));
    const form = keep(await request('POST', '/api/v1/login', { form: { username, password }, headers: { cookie: cookies() } }));
    if (!form.headers.location) throw new Error(`login: ${form.status} ${form.text.slice(0, 200)}`);
    const granted = keep(await request('GET', pathOf(form.headers.location), { headers: { cookie: cookies() } }));
    const code = new URL(granted.headers.location ?? '', base).searchParams.get('code');
    if (!code) throw new Error(`login: no code (${granted.status})`);
    const answer = keep(await request('POST', '/api/v1/token', { body: { grant_type: 'authorization_code', credentials: { code, provider: 'local' } }, headers: { cookie: cookies() } }));
    token = jar.get('frontend_token') ?? JSON.parse(answer.text).access_token ?? null;
    if (!token) throw new Error(`login: no token (${answer.status})`);
  };

  const api = async (path, body) => {
    const method = body === undefined ? 'GET' : 'POST';
    if (method === 'GET') stats.gets += 1;
    else stats.posts += 1;
    const res = await request(method, `/api/v1${path}`, { body, headers: { authorization: `Bearer ${token}` } });
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${res.text.slice(0, 300)}`);
    return res.text ? JSON.parse(res.text) : null;
  };

  return { api, login, raw: (method, path) => request(method, path), stats, close: () => agent.destroy() };
}
