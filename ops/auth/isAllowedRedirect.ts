/**
 * Where a login may send its authorization code. Without this check any page could start
 * /auth with its own redirect_uri and collect codes of users who already have a session.
 * Allowed: relative paths on this service, loopback origins (local tools and development), the
 * configured origins, or everything when the list holds "*".
 */
export const isAllowedRedirect = (redirectUri: string, allowedOrigins: ReadonlyArray<string>): boolean => {
  if (redirectUri.startsWith('/') && !redirectUri.startsWith('//') && !redirectUri.includes('\\')) return true;
  let url: URL;
  try {
    url = new URL(redirectUri);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  if (allowedOrigins.includes('*')) return true;
  if (['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) return true;
  return allowedOrigins.includes(url.origin);
};
