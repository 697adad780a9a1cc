import { useCallback, useRef, useState } from 'react';
import { errorText } from '../api.ts';

export interface Action<T> {
  result: T | null;
  failure: string | null;
  running: boolean;
  run(): void;
}

/**
 * A user-started request (a form's submit, a query's Run): its answer, or the reason it failed,
 * and whether it is under way. The latest `action` is the one run (it reads the form's state).
 */
export const useAction = <T,>(action: () => Promise<T>): Action<T> => {
  const [state, setState] = useState<{ result: T | null; failure: string | null; running: boolean }>({ result: null, failure: null, running: false });
  const latest = useRef(action);
  latest.current = action;
  const run = useCallback(() => {
    setState((previous) => ({ ...previous, failure: null, running: true }));
    latest.current().then(
      (result) => setState({ result, failure: null, running: false }),
      (error: unknown) => setState({ result: null, failure: errorText(error), running: false }),
    );
  }, []);
  return { ...state, run };
};
