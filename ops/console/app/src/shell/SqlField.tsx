/** A statement box (SQL is text: a plain, monospace textarea); Ctrl+Enter (Cmd+Enter) runs it. */
export const SqlField = ({ id, value, onChange, onRun }: { id: string; value: string; onChange(value: string): void; onRun(): void }) => (
  <div className="field">
    <label htmlFor={id}>SQL</label>
    <textarea
      id={id}
      className="sql"
      rows={5}
      spellCheck={false}
      value={value}
      aria-describedby={`${id}-hint`}
      onChange={(event) => onChange(event.target.value)}
      onKeyDown={(event) => {
        if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
          event.preventDefault();
          onRun();
        }
      }}
    />
    <span className="hint" id={`${id}-hint`}>
      Ctrl+Enter runs it.
    </span>
  </div>
);
