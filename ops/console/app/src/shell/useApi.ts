import { useCallback, useEffect, useState } from 'react';
import { errorText } from '../api.ts';

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  loading: boolean;
  reload(): void;
}

/** Runs `load` when its dependencies change (and on reload()); the last answer wins. */
export const useApi = <T,>(load: (signal: AbortSignal) => Promise<T>, deps: ReadonlyArray<unknown>): Loaded<T> => {
  const [state, setState] = useState<{ data: T | null; error: string | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((previous) => ({ ...previous, loading: true }));
    load(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setState({ data, error: null, loading: false });
      },
      (error: unknown) => {
        if (!controller.signal.aborted) setState({ data: null, error: errorText(error), loading: false });
      },
    );
    return () => controller.abort();
    // The caller's dependencies decide when to load again.
  }, [...deps, round]);
  const reload = useCallback(() => setRound((value) => value + 1), []);
  return { ...state, reload };
};
