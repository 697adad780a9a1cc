/**
 * Where a login may send its authorization code. Without this check any page could start
 * /auth with its own redirect_uri and collect codes of users who already have a session.
 *
 * The value is judged as the browser will read it, not as text: WHATWG URL parsing resolved against
 * the service's own origin, which (like a browser) strips tabs and newlines and reads backslashes as
 * slashes in http(s) URLs. A prefix test on the raw string let `/%09/evil.example/cb` through: it
 * starts with one slash, yet the browser resolves it to `//evil.example/cb`, another host.
 *
 * Allowed: http(s) URLs on the service's own origin, loopback origins (local tools and development),
 * the configured origins, or every http(s) origin when the list holds "*". Userinfo is refused
 * outright (`http://localhost@evil.example` is a host of evil.example; the other way round only
 * confuses readers of the log).
 */
export const resolveRedirect = (redirectUri: string, allowedOrigins: ReadonlyArray<string>, serviceOrigin: string): string | null => {
  let url: URL;
  let service: URL;
  try {
    service = new URL(serviceOrigin);
    url = new URL(redirectUri, service);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username !== '' || url.password !== '') return null;
  const allowed =
    url.origin === service.origin ||
    LOOPBACK_HOSTS.has(url.hostname) ||
    allowedOrigins.includes('*') ||
    allowedOrigins.includes(url.origin);
  // The serialised form is what the code goes to: what was checked is exactly what is used.
  return allowed ? url.href : null;
};

/** Hostnames as the URL parser normalises them (`127.1` and `0x7f.0.0.1` become 127.0.0.1). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export const isAllowedRedirect = (redirectUri: string, allowedOrigins: ReadonlyArray<string>, serviceOrigin: string): boolean =>
  resolveRedirect(redirectUri, allowedOrigins, serviceOrigin) !== null;
