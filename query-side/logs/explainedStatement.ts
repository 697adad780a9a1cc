/**
 * The text of the statement an EXPLAIN wraps: what follows `EXPLAIN`, `EXPLAIN ANALYZE [VERBOSE]`,
 * `EXPLAIN VERBOSE` or `EXPLAIN (option, ...)` (DuckDB's grammar), comments and whitespace skipped.
 * Null when the text does not start that way.
 *
 * Why: DuckDB's parser says a statement is an EXPLAIN but not what it explains, and
 * `EXPLAIN ANALYZE COPY ... TO '<the category folder>/x'` runs the COPY (the sandbox allows that
 * folder). The caller parses the text returned here with DuckDB again and accepts only a SELECT;
 * anything this scanner gets wrong fails to parse or is not a SELECT, so a mistake refuses a query
 * rather than lets one through.
 */
export const explainedStatement = (sql: string): string | null => {
  let at = 0;

  /** Skips whitespace, `-- line` and `/* nested block *\/` comments; false on an unterminated block. */
  const skipTrivia = (): boolean => {
    for (;;) {
      while (at < sql.length && /\s/.test(sql[at] ?? '')) at += 1;
      if (sql.startsWith('--', at)) {
        const end = sql.indexOf('\n', at);
        at = end === -1 ? sql.length : end + 1;
      } else if (sql.startsWith('/*', at)) {
        let depth = 0;
        do {
          if (sql.startsWith('/*', at)) {
            depth += 1;
            at += 2;
          } else if (sql.startsWith('*/', at)) {
            depth -= 1;
            at += 2;
          } else if (at >= sql.length) {
            return false;
          } else {
            at += 1;
          }
        } while (depth > 0);
      } else {
        return true;
      }
    }
  };

  /** The keyword at the cursor (upper-cased) without consuming it, or ''. */
  const peekWord = (): string => /^[A-Za-z_]+/.exec(sql.slice(at, at + 16))?.[0].toUpperCase() ?? '';

  if (!skipTrivia() || peekWord() !== 'EXPLAIN') return null;
  at += 'EXPLAIN'.length;
  if (!skipTrivia()) return null;
  const next = peekWord();
  if (next === 'ANALYZE' || next === 'ANALYSE') {
    at += next.length;
    if (!skipTrivia()) return null;
    if (peekWord() === 'VERBOSE') at += 'VERBOSE'.length;
  } else if (next === 'VERBOSE') {
    at += next.length;
  } else if (sql[at] === '(') {
    // Options are names with an optional string, number or name argument: no nested parentheses,
    // but a quoted argument may hold one.
    at += 1;
    for (;;) {
      if (!skipTrivia()) return null;
      const char = sql[at];
      if (char === undefined) return null;
      if (char === ')') {
        at += 1;
        break;
      }
      if (char === "'" || char === '"') {
        const close = closingQuote(sql, at);
        if (close === -1) return null;
        at = close + 1;
      } else {
        at += 1;
      }
    }
  }
  if (!skipTrivia()) return null;
  return sql.slice(at);
};

/** Index of the quote closing the one at `open` (a doubled quote is an escaped one), or -1. */
const closingQuote = (sql: string, open: number): number => {
  const quote = sql[open];
  let at = open + 1;
  while (at < sql.length) {
    if (sql[at] === quote) {
      if (sql[at + 1] !== quote) return at;
      at += 2;
    } else {
      at += 1;
    }
  }
  return -1;
};
