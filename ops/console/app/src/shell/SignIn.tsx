import { useId, useState } from 'react';
import { ApiError } from '../api.ts';
import { redeemCode, resumeSession, startSignIn, type Profile } from '../auth.ts';
import { navigate } from '../router.ts';
import { Notice } from './Notice.tsx';
import { useAction } from './useAction.ts';

/** A sign-in whose code went by mail (EMAIL_TOTP): where to go once it is entered, and what to do then. */
export interface MailedCodeStep {
  returnTo: string;
  onSignedIn(profile: Profile): void;
  /** Signs the browser out of the service's login session, so another account can sign in. */
  onStartOver(): void;
}

/**
 * Signed out: one button into the service's login flow (spec 5.3). With EMAIL_TOTP the flow comes
 * back without a code and the page asks for the one the service mailed; "Mail a new code" runs the
 * flow again (the service's login session skips the password form) and mails another.
 */
export const SignIn = ({ reason, mailedCode = null }: { reason: string | null; mailedCode?: MailedCodeStep | null }) => (
  <main id="main" className="sign-in">
    <h1>Pipeline orchestrator</h1>
    {reason ? (
      <p role="alert" className="notice error">
        {reason}
      </p>
    ) : null}
    {mailedCode ? (
      <MailedCodeForm step={mailedCode} />
    ) : (
      <>
        <p>Sign in to browse the catalog, run tasks and follow their output.</p>
        <button type="button" className="primary" onClick={() => startSignIn(window.location.pathname + window.location.search)}>
          Sign in
        </button>
      </>
    )}
  </main>
);

const MailedCodeForm = ({ step }: { step: MailedCodeStep }) => {
  const [code, setCode] = useState('');
  const id = useId();
  const submit = useAction(async () => {
    try {
      await redeemCode(code);
    } catch (error) {
      // The service says only "Invalid authorization code"; the user needs to know what to do.
      if (error instanceof ApiError && error.status === 401) {
        throw new Error('This code is not valid: it may be mistyped, already used, or older than 5 minutes. Check the mail, or mail a new code.', { cause: error });
      }
      throw error;
    }
    const profile = await resumeSession();
    if (profile === null) throw new Error('The code was accepted, but the session could not be read. Sign in again.');
    navigate(step.returnTo, { replace: true });
    step.onSignedIn(profile);
  });
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        submit.run();
      }}
    >
      <p>A sign-in code was mailed to the address of your account. It can be used once, within 5 minutes.</p>
      <div className="field">
        <label htmlFor={`${id}-code`}>Code from the mail</label>
        <input
          id={`${id}-code`}
          name="code"
          autoComplete="one-time-code"
          spellCheck={false}
          autoCapitalize="off"
          required
          autoFocus
          value={code}
          onChange={(event) => setCode(event.target.value)}
        />
      </div>
      {submit.failure ? <Notice kind="error">{submit.failure}</Notice> : null}
      <div className="actions">
        <button type="submit" className="primary" disabled={submit.running}>
          Sign in
        </button>
        <button type="button" onClick={() => startSignIn(step.returnTo)}>
          Mail a new code
        </button>
        <button type="button" onClick={step.onStartOver}>
          Start over
        </button>
      </div>
    </form>
  );
};
