import { useEffect, useState } from 'react';

/**
 * The value of a look-up keyed by `key` (a name cache's promise), `initial` until it settles; the
 * answer for an older key is dropped. The caches never reject.
 */
export const useResolved = <T,>(key: string, initial: T, resolve: (key: string) => Promise<T>): T => {
  const [state, setState] = useState<{ key: string; value: T }>({ key, value: initial });
  useEffect(() => {
    let current = true;
    setState({ key, value: initial });
    void resolve(key).then((value) => {
      if (current) setState({ key, value });
    });
    return () => {
      current = false;
    };
    // `initial` and `resolve` are fixed per call site: the key alone decides.
  }, [key]);
  return state.key === key ? state.value : initial;
};
