import { startSignIn } from '../auth.ts';

/** Signed out: one button into the service's login flow (spec 5.3). */
export const SignIn = ({ reason }: { reason: string | null }) => (
  <main id="main" className="sign-in">
    <h1>Pipeline orchestrator</h1>
    {reason ? (
      <p role="alert" className="notice error">
        {reason}
      </p>
    ) : null}
    <p>Sign in to browse the catalog, run tasks and follow their output.</p>
    <button type="button" className="primary" onClick={() => startSignIn(window.location.pathname + window.location.search)}>
      Sign in
    </button>
  </main>
);
