import type { ReactNode } from 'react';

/** An error is announced at once (role=alert); other notes politely (role=status). */
export const Notice = ({ kind, children }: { kind: 'error' | 'info' | 'success'; children: ReactNode }) => (
  <p className={`notice ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
    {children}
  </p>
);
