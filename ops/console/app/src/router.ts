import { useSyncExternalStore, type MouseEvent } from 'react';

/**
 * Client routes are plain paths under /console/ (the service answers every one of them with the
 * console's index.html), moved between with the History API. Small enough not to need a library.
 */
const listeners = new Set<() => void>();
const notify = (): void => {
  for (const listener of listeners) listener();
};
window.addEventListener('popstate', notify);

const subscribe = (listener: () => void): (() => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};
const snapshot = (): string => window.location.pathname + window.location.search;

export const navigate = (to: string, options: { replace?: boolean } = {}): void => {
  if (to === snapshot()) return;
  if (options.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  notify();
};

export interface Location {
  path: string;
  params: URLSearchParams;
}

export const useLocation = (): Location => {
  const current = useSyncExternalStore(subscribe, snapshot);
  const url = new URL(current, window.location.origin);
  return { path: url.pathname.replace(/\/+$/, '') || '/', params: url.searchParams };
};

/** For `<a href>` clicks: same-tab, unmodified left clicks stay in the page. */
export const followLink = (event: MouseEvent<HTMLAnchorElement>): void => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate(event.currentTarget.getAttribute('href') ?? '/');
};

export const itemPath = (laui: string): string => `/console/item/${laui}`;
