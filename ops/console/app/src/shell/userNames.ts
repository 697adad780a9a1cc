import { ApiError, api, query } from '../api.ts';

/** What the console can tell of a user named by id in a record (history, created_by...). */
export interface UserName {
  username: string;
  email: string;
  you: boolean;
}

interface Me {
  laui: string;
  username: string;
  email: string;
}

interface EventsPage {
  events: Array<{ type: string; data: { username?: unknown; email?: unknown } }>;
}

/**
 * Users by id through read routes the caller already has, never a new one: the caller's own
 * profile (GET /user/me), and, for administrators and auditors, the `UserCreated` event of the
 * user's stream (GET /events). Any other caller sees other users' ids only: the service has no
 * directory of users for everyone, on purpose. Once per page load; a 403 from /events stops the
 * look-ups through it for the page's life.
 */
let me: Promise<Me | null> | null = null;
let eventsAllowed = true;
const names = new Map<string, Promise<UserName | null>>();

const lookUp = async (laui: string): Promise<UserName | null> => {
  me ??= api<Me>('/api/v1/user/me');
  const profile = await me.catch(() => {
    me = null;
    return null;
  });
  if (profile?.laui === laui) return { username: profile.username, email: profile.email, you: true };
  if (!eventsAllowed) return null;
  try {
    const page = await api<EventsPage>(`/api/v1/events?${query({ stream: `user-${laui}`, type: 'UserCreated', limit: 1 })}`);
    const data = page.events[0]?.data;
    return typeof data?.username === 'string' ? { username: data.username, email: typeof data.email === 'string' ? data.email : '', you: false } : null;
  } catch (error) {
    if (error instanceof ApiError && error.status === 403) eventsAllowed = false;
    // Anything else (the network, a restart) is asked again by the next mention.
    else names.delete(laui);
    return null;
  }
};

export const userName = (laui: string): Promise<UserName | null> => {
  let lookup = names.get(laui);
  if (!lookup) {
    lookup = lookUp(laui);
    names.set(laui, lookup);
  }
  return lookup;
};
