import { useId, useRef, type KeyboardEvent, type ReactNode } from 'react';

export interface Tab {
  id: string;
  label: string;
  render(): ReactNode;
}

/** WAI-ARIA tabs: Left/Right/Home/End move between tabs (automatic activation), Tab enters the panel. */
export const Tabs = ({ tabs, current, onChange, label }: { tabs: Tab[]; current: string; onChange(id: string): void; label: string }) => {
  const prefix = useId();
  const buttons = useRef(new Map<string, HTMLButtonElement>());
  const index = Math.max(0, tabs.findIndex((tab) => tab.id === current));
  const active = tabs[index];
  const select = (next: number): void => {
    const tab = tabs[(next + tabs.length) % tabs.length];
    if (!tab) return;
    onChange(tab.id);
    buttons.current.get(tab.id)?.focus();
  };
  const onKeyDown = (event: KeyboardEvent): void => {
    const moves: Record<string, number> = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 };
    const next = moves[event.key];
    if (next === undefined) return;
    event.preventDefault();
    select(next);
  };
  return (
    <div className="tabs">
      <div role="tablist" aria-label={label} onKeyDown={onKeyDown}>
        {tabs.map((tab) => (
          <button
            key={tab.id}
            ref={(element) => {
              if (element) buttons.current.set(tab.id, element);
              else buttons.current.delete(tab.id);
            }}
            type="button"
            role="tab"
            id={`${prefix}-tab-${tab.id}`}
            aria-selected={tab === active}
            aria-controls={`${prefix}-panel-${tab.id}`}
            tabIndex={tab === active ? 0 : -1}
            onClick={() => onChange(tab.id)}
          >
            {tab.label}
          </button>
        ))}
      </div>
      {active ? (
        <div role="tabpanel" id={`${prefix}-panel-${active.id}`} aria-labelledby={`${prefix}-tab-${active.id}`} tabIndex={0} className="tabpanel">
          {active.render()}
        </div>
      ) : null}
    </div>
  );
};
