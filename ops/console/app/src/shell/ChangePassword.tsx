import { useId, useState, type FormEvent } from 'react';
import { api, errorText } from '../api.ts';
import { Notice } from './Notice.tsx';

/** First sign-in with a one-time password: POST /user/change-password before anything else (spec 5.3 step 4). */
export const ChangePassword = ({ onChanged }: { onChanged(): void }) => {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [failure, setFailure] = useState<string | null>(null);
  const id = useId();
  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setFailure(null);
    try {
      await api('/api/v1/user/change-password', { body: { current_password: current, new_password: next } });
      onChanged();
    } catch (error) {
      setFailure(errorText(error));
    }
  };
  return (
    <main id="main" className="sign-in">
      <h1>Choose a new password</h1>
      <p>Your password was set by an administrator and must be changed before you go on.</p>
      <form onSubmit={(event) => void submit(event)}>
        <div className="field">
          <label htmlFor={`${id}-current`}>Current password</label>
          <input id={`${id}-current`} type="password" autoComplete="current-password" required value={current} onChange={(event) => setCurrent(event.target.value)} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-new`}>New password</label>
          <input id={`${id}-new`} type="password" autoComplete="new-password" required value={next} onChange={(event) => setNext(event.target.value)} />
        </div>
        {failure ? <Notice kind="error">{failure}</Notice> : null}
        <button type="submit" className="primary">
          Change password
        </button>
      </form>
    </main>
  );
};
