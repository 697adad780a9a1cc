import { useId, useState } from 'react';
import { api } from '../api.ts';
import { Notice } from './Notice.tsx';
import { useAction } from './useAction.ts';

/** First sign-in with a one-time password: POST /user/change-password before anything else (spec 5.3 step 4). */
export const ChangePassword = ({ onChanged }: { onChanged(): void }) => {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const id = useId();
  const change = useAction(async () => {
    await api('/api/v1/user/change-password', { body: { current_password: current, new_password: next } });
    onChanged();
  });
  return (
    <main id="main" className="sign-in">
      <h1>Choose a new password</h1>
      <p>Your password was set by an administrator and must be changed before you go on.</p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          change.run();
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-current`}>Current password</label>
          <input id={`${id}-current`} type="password" autoComplete="current-password" required value={current} onChange={(event) => setCurrent(event.target.value)} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-new`}>New password</label>
          <input id={`${id}-new`} type="password" autoComplete="new-password" required value={next} onChange={(event) => setNext(event.target.value)} />
        </div>
        {change.failure ? <Notice kind="error">{change.failure}</Notice> : null}
        <button type="submit" className="primary" disabled={change.running}>
          Change password
        </button>
      </form>
    </main>
  );
};
