import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { errorText, onSignedOut } from './api.ts';
import { CALLBACK_PATH, awaitingMailedCode, readCallback, redeemCode, resumeSession, signOut, stopAwaitingMailedCode, type Profile } from './auth.ts';
import { followLink, navigate, useLocation } from './router.ts';
import { CatalogPage } from './catalog/CatalogPage.tsx';
import { TreeStore } from './catalog/TreeStore.ts';
import { loadItemTypes } from './catalog/itemTypes.ts';
import type { ItemTypeInfo } from './catalog/types.ts';
import { LogQueryPage } from './logs/LogQueryPage.tsx';
import { SqlPage } from './sql/SqlPage.tsx';
import { EventsPage } from './events/EventsPage.tsx';
import { SignIn } from './shell/SignIn.tsx';
import { ChangePassword } from './shell/ChangePassword.tsx';
import { Notice } from './shell/Notice.tsx';

/** `code-needed`: the sign-in flow came back without a code (EMAIL_TOTP): the code was mailed. */
type Session =
  | { kind: 'checking' }
  | { kind: 'signed-out'; reason: string | null }
  | { kind: 'code-needed'; returnTo: string }
  | { kind: 'signed-in'; profile: Profile };

const NAV = [
  { path: '/', label: 'Catalog', matches: (path: string) => path === '/' || path === '/console' || path.startsWith('/console/item') },
  { path: '/console/logs', label: 'Log query', matches: (path: string) => path === '/console/logs' },
  { path: '/console/sql', label: 'SQL', matches: (path: string) => path === '/console/sql' },
  { path: '/console/events', label: 'Events', matches: (path: string) => path === '/console/events' },
];

const TITLES: Record<string, string> = { '/console/logs': 'Log query', '/console/sql': 'SQL inspection', '/console/events': 'Event stream' };

/**
 * Where the page load leaves the session: the callback's code exchanged first when this is the
 * callback (or the code field, when the code went by mail), then the cookie's token. Once per page
 * load (a code is spent on first use).
 */
let boot: Promise<Session> | null = null;
const startSession = (): Promise<Session> => {
  boot ??= (async (): Promise<Session> => {
    if (window.location.pathname === CALLBACK_PATH) {
      try {
        const callback = readCallback(window.location.search);
        // The state, and the code once spent, leave the address bar and the history.
        if (callback.code === null) {
          navigate('/', { replace: true });
          return { kind: 'code-needed', returnTo: callback.returnTo };
        }
        await redeemCode(callback.code);
        navigate(callback.returnTo, { replace: true });
      } catch (error) {
        navigate('/', { replace: true });
        return { kind: 'signed-out', reason: errorText(error) };
      }
    }
    const profile = await resumeSession();
    if (profile) {
      stopAwaitingMailedCode();
      return { kind: 'signed-in', profile };
    }
    const awaiting = awaitingMailedCode();
    return awaiting === null ? { kind: 'signed-out', reason: null } : { kind: 'code-needed', returnTo: awaiting };
  })();
  return boot;
};

/** The console: sign-in (spec 5.3), then the catalog, log query, SQL inspection and the event stream. */
export const App = () => {
  const location = useLocation();
  const [session, setSession] = useState<Session>({ kind: 'checking' });
  const [types, setTypes] = useState<Map<string, ItemTypeInfo> | null>(null);
  const [typesError, setTypesError] = useState<string | null>(null);
  const store = useMemo(() => new TreeStore(), []);
  const main = useRef<HTMLElement>(null);

  useEffect(() => {
    void startSession().then(setSession);
    return onSignedOut(() => setSession({ kind: 'signed-out', reason: 'Your session ended. Sign in again.' }));
  }, []);

  useEffect(() => {
    if (session.kind !== 'signed-in' || session.profile.must_change_password) return;
    loadItemTypes().then(setTypes, (error: unknown) => setTypesError(errorText(error)));
  }, [session]);

  useEffect(() => {
    document.title = `${TITLES[location.path] ?? 'Catalog'} · Pipeline orchestrator`;
  }, [location.path]);

  if (session.kind === 'checking') {
    return (
      <main id="main" className="sign-in" aria-busy="true">
        <p role="status">Loading…</p>
      </main>
    );
  }
  if (session.kind === 'signed-out') return <SignIn reason={session.reason} />;
  if (session.kind === 'code-needed') {
    return (
      <SignIn
        reason={null}
        mailedCode={{
          returnTo: session.returnTo,
          onSignedIn: (profile) => setSession({ kind: 'signed-in', profile }),
          onStartOver: () => void signOut().finally(() => setSession({ kind: 'signed-out', reason: null })),
        }}
      />
    );
  }
  if (session.profile.must_change_password) {
    return <ChangePassword onChanged={() => setSession({ kind: 'signed-in', profile: { ...session.profile, must_change_password: false } })} />;
  }

  const itemMatch = /^\/console\/item\/([0-9a-f]{24})$/.exec(location.path);
  const page = (): ReactNode => {
    if (typesError) return <Notice kind="error">{typesError}</Notice>;
    if (!types) return <p role="status">Loading…</p>;
    switch (location.path) {
      case '/console/logs':
        return <LogQueryPage />;
      case '/console/sql':
        return <SqlPage types={types} initialConnection={location.params.get('connection') ?? ''} />;
      case '/console/events':
        return <EventsPage />;
      default:
        return <CatalogPage store={store} types={types} selected={itemMatch?.[1] ?? null} />;
    }
  };

  return (
    <>
      <a className="skip-link" href="#main" onClick={(event) => {
        event.preventDefault();
        main.current?.focus();
      }}>
        Skip to content
      </a>
      <header className="top">
        <h1 className="brand">
          <a href="/" onClick={followLink}>
            Pipeline orchestrator
          </a>
        </h1>
        <nav aria-label="Sections">
          <ul>
            {NAV.map((entry) => (
              <li key={entry.path}>
                <a href={entry.path} onClick={followLink} aria-current={entry.matches(location.path) ? 'page' : undefined}>
                  {entry.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="user">
          <span>
            <span className="visually-hidden">Signed in as </span>
            {session.profile.username}
          </span>
          <button
            type="button"
            onClick={() => {
              void signOut().finally(() => setSession({ kind: 'signed-out', reason: null }));
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {page()}
      </main>
    </>
  );
};
