import { readings, SqlLexError, tokenize, type Lexing, type SqlToken } from './sqlTokens.ts';

/**
 * The statement check of POST /api/v1/query/execute (spec 4.10), before any connection is opened.
 *
 * The rule, on the tokens of shared/query/sqlTokens.ts (comments dropped):
 *  - the first word, after any opening parentheses, is SELECT, WITH or EXPLAIN (plus DESCRIBE where
 *    the embedded engine serves the connection);
 *  - no word is one of the spec's blocked keywords (INSERT, UPDATE, DELETE, DROP, CREATE, ALTER,
 *    TRUNCATE, GRANT, REVOKE), nor INTO: `SELECT ... INTO t` creates a table in PostgreSQL and
 *    `INTO OUTFILE / DUMPFILE` writes a file on a MySQL server, which a read-only session does not
 *    stop. A word is refused wherever it stands, in any letter case: `SELECT ... FOR UPDATE` and a
 *    column named `delete` are refused too (quote the identifier: `"delete"`, `` `delete` ``);
 *  - the same words inside string literals, quoted identifiers, dollar-quoted strings and comments
 *    are data, not code, and pass (`WHERE message LIKE '%DELETE%'`);
 *  - one statement: a `;` may only end the text (comments may follow it);
 *  - an unterminated literal, identifier or comment is refused.
 * Every reading of the dialect must pass (sqlTokens.ts): where servers disagree on where a literal
 * ends, a statement passes only if it passes both ways. The check is a first gate; the read-only
 * session (and the credentials' own rights) is what keeps the target unchanged.
 */

export const BLOCKED_KEYWORDS = ['INSERT', 'UPDATE', 'DELETE', 'DROP', 'CREATE', 'ALTER', 'TRUNCATE', 'GRANT', 'REVOKE'] as const;
export const DEFAULT_LEADING_WORDS = ['SELECT', 'WITH', 'EXPLAIN'] as const;

export type SqlDialect = 'postgresql' | 'mysql' | 'generic';

export interface StatementRules {
  dialect: SqlDialect;
  /** Words a statement may start with; default SELECT, WITH, EXPLAIN. */
  leadingWords?: ReadonlyArray<string>;
}

export type StatementCheck = { ok: true } | { ok: false; reason: string };

const STANDARD: Lexing = {
  backslashEscapes: false,
  nestedComments: false,
  hashComments: false,
  dashCommentNeedsSpace: false,
  dollarQuotes: false,
  executableComments: false,
  escapeStringPrefix: false,
  doubleQuotedIdentifiers: true,
  backtickIdentifiers: false,
};

/**
 * The readings of each dialect. PostgreSQL: one (the target opens its sessions with
 * standard_conforming_strings on, so only E'...' takes backslash escapes). MySQL and MariaDB: one
 * (the target takes NO_BACKSLASH_ESCAPES and ANSI_QUOTES out of the session's sql_mode, so '...'
 * and "..." are strings with backslash escapes, as by default). Generic (Athena, Redshift,
 * BigQuery, DuckDB): backslash escapes, nested comments and `#` comments each both ways; `$$` and
 * backticks always quote (the engines without them refuse the character, so their content never runs).
 */
const DIALECT_READINGS: Readonly<Record<SqlDialect, ReadonlyArray<Lexing>>> = {
  postgresql: [{ ...STANDARD, nestedComments: true, dollarQuotes: true, escapeStringPrefix: true }],
  mysql: [{ ...STANDARD, backslashEscapes: true, hashComments: true, dashCommentNeedsSpace: true, executableComments: true, doubleQuotedIdentifiers: false, backtickIdentifiers: true }],
  generic: readings({ ...STANDARD, dollarQuotes: true, backtickIdentifiers: true }, ['backslashEscapes', 'nestedComments', 'hashComments']),
};

const BLOCKED = new Set<string>(BLOCKED_KEYWORDS);

/** The first reason `tokens` break the rule, or null. */
const refusal = (tokens: ReadonlyArray<SqlToken>, leading: ReadonlySet<string>, leadingText: string): string | null => {
  let first = 0;
  while (tokens[first]?.kind === 'punct' && tokens[first]?.text === '(') first += 1;
  const head = tokens[first];
  if (head?.kind !== 'word' || !leading.has(head.text.toUpperCase())) return `Only ${leadingText} statements are allowed`;
  const semicolon = tokens.findIndex((token) => token.kind === 'semicolon');
  if (semicolon !== -1 && semicolon !== tokens.length - 1) return 'Only one statement is allowed';
  for (const token of tokens) {
    if (token.kind !== 'word') continue;
    const word = token.text.toUpperCase();
    if (BLOCKED.has(word)) return `Blocked keyword: ${word}`;
    if (word === 'INTO') return 'SELECT ... INTO is not allowed (it creates a table or writes a file)';
  }
  return null;
};

const listed = (words: ReadonlyArray<string>): string => (words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`);

export const checkStatement = (sql: string, rules: StatementRules): StatementCheck => {
  const words = (rules.leadingWords ?? DEFAULT_LEADING_WORDS).map((word) => word.toUpperCase());
  const leading = new Set(words);
  const leadingText = listed(words);
  for (const lexing of DIALECT_READINGS[rules.dialect]) {
    let tokens: SqlToken[];
    try {
      tokens = tokenize(sql, lexing);
    } catch (error) {
      if (error instanceof SqlLexError) return { ok: false, reason: `${error.message} at offset ${error.at}` };
      throw error;
    }
    const reason = refusal(tokens, leading, leadingText);
    if (reason !== null) return { ok: false, reason };
  }
  return { ok: true };
};
