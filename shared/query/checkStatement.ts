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
 *  - no word names one of REFUSED_NAMES (server files, large objects, notifications, other
 *    connections, SQL run from a string, server administration): a read-only transaction does not
 *    stop these (`lo_import`, `lo_export`, `pg_notify`, MySQL's `LOAD_FILE`, `INTO OUTFILE`). A bare
 *    word is refused wherever it stands; a quoted identifier when it is called (`"lo_import"(...)`,
 *    PostgreSQL's `U&"lo\005fimport"(...)` decoded first);
 *  - one statement: a `;` may only end the text (comments may follow it);
 *  - an unterminated literal, identifier or comment is refused.
 * Every reading of the dialect must pass (sqlTokens.ts): where servers disagree on where a literal
 * ends, a statement passes only if it passes both ways. The check is a first gate; the read-only
 * session (and the credentials' own rights) is what keeps the target unchanged.
 */

export const BLOCKED_KEYWORDS = ['INSERT', 'UPDATE', 'DELETE', 'DROP', 'CREATE', 'ALTER', 'TRUNCATE', 'GRANT', 'REVOKE'] as const;
export const DEFAULT_LEADING_WORDS = ['SELECT', 'WITH', 'EXPLAIN'] as const;

/**
 * Names refused anywhere in a statement, by dialect (README "SQL inspection" lists them); `*` ends a
 * prefix. What they share: a read-only transaction lets them act outside the query's answer.
 */
export const REFUSED_NAMES: Readonly<Record<'postgresql' | 'mysql', ReadonlyArray<string>>> = {
  postgresql: [
    // Large objects: lo_import / lo_export read and write server files, the others change pg_largeobject.
    'lo_*',
    'loread',
    'lowrite',
    // Server files and directories.
    'pg_read_file',
    'pg_read_binary_file',
    'pg_ls_*',
    'pg_stat_file',
    'pg_file_*',
    'pg_logdir_ls',
    // COPY ... PROGRAM / TO a file (never part of a SELECT).
    'copy',
    // Other connections, other sessions, SQL run from a string.
    'dblink*',
    'pg_background_*',
    'pg_notify',
    'query_to_xml*',
    'ts_stat',
    'pg_cancel_backend',
    'pg_terminate_backend',
    // Server administration.
    'pg_reload_conf',
    'pg_rotate_logfile',
    'pg_switch_wal',
    'pg_promote',
    'pg_create_restore_point',
    'pg_stat_reset*',
  ],
  mysql: ['load_file', 'outfile', 'dumpfile', 'sys_exec', 'sys_eval', 'sys_get', 'sys_set', 'lib_mysqludf_*'],
};

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
  carriageReturnEndsLine: false,
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
 * Line comments: PostgreSQL ends them at `\r` as at `\n`, MySQL only at `\n`; generic both ways.
 * The MySQL target also pins the session's character set to utf8mb4 (SET NAMES): the server then
 * reads the same characters this lexer reads (a big5 or sjis session can read a multi-byte
 * character's 0x5C trail byte as a backslash, or the reverse).
 */
const DIALECT_READINGS: Readonly<Record<SqlDialect, ReadonlyArray<Lexing>>> = {
  postgresql: [{ ...STANDARD, nestedComments: true, dollarQuotes: true, escapeStringPrefix: true, carriageReturnEndsLine: true }],
  mysql: [{ ...STANDARD, backslashEscapes: true, hashComments: true, dashCommentNeedsSpace: true, executableComments: true, doubleQuotedIdentifiers: false, backtickIdentifiers: true }],
  generic: readings({ ...STANDARD, dollarQuotes: true, backtickIdentifiers: true }, ['backslashEscapes', 'nestedComments', 'hashComments', 'carriageReturnEndsLine']),
};

/** The tokens of each reading the check applies to `sql` in `dialect` (throws SqlLexError as tokenize does). */
export const statementReadings = (sql: string, dialect: SqlDialect): SqlToken[][] => DIALECT_READINGS[dialect].map((lexing) => tokenize(sql, lexing));

const BLOCKED = new Set<string>(BLOCKED_KEYWORDS);

/** REFUSED_NAMES of a dialect as a test on a lower-cased name; generic engines get both lists (Redshift speaks PostgreSQL). */
const refusedTest = (names: ReadonlyArray<string>): ((name: string) => boolean) => {
  const exact = new Set(names.filter((name) => !name.endsWith('*')));
  const prefixes = names.filter((name) => name.endsWith('*')).map((name) => name.slice(0, -1));
  return (name) => exact.has(name) || prefixes.some((prefix) => name.startsWith(prefix));
};
const REFUSED: Readonly<Record<SqlDialect, (name: string) => boolean>> = {
  postgresql: refusedTest(REFUSED_NAMES.postgresql),
  mysql: refusedTest(REFUSED_NAMES.mysql),
  generic: refusedTest([...REFUSED_NAMES.postgresql, ...REFUSED_NAMES.mysql]),
};

/**
 * PostgreSQL's `U&"..."` identifier as the server decodes it: `\XXXX` and `\+XXXXXX` (or the
 * UESCAPE character) are code points. `escape` is the UESCAPE character when one follows.
 */
const unicodeIdentifier = (text: string, escape: string): string => {
  let out = '';
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index] as string;
    if (char !== escape) {
      out += char;
    } else if (text[index + 1] === escape) {
      out += escape;
      index += 1;
    } else {
      const long = text[index + 1] === '+';
      const digits = text.slice(index + (long ? 2 : 1), index + (long ? 8 : 5));
      const code = /^[0-9A-Fa-f]+$/.test(digits) ? Number.parseInt(digits, 16) : Number.NaN;
      out += Number.isNaN(code) || code > 0x10ffff ? char : String.fromCodePoint(code);
      index += Number.isNaN(code) ? 0 : digits.length + (long ? 1 : 0);
    }
  }
  return out;
};

const isUescape = (token: SqlToken | undefined): boolean => token?.kind === 'word' && token.text.toUpperCase() === 'UESCAPE';

/** The name a quoted token stands for: U&"..." decoded (PostgreSQL), else its text; lower-cased. */
const quotedName = (tokens: ReadonlyArray<SqlToken>, index: number): string => {
  const token = tokens[index] as SqlToken;
  const ampersand = tokens[index - 1];
  const u = tokens[index - 2];
  const unicode = ampersand?.text === '&' && ampersand.at === token.at - 1 && u?.kind === 'word' && u.at === token.at - 2 && (u.text === 'U' || u.text === 'u');
  if (!unicode) return token.text.toLowerCase();
  const uescape = isUescape(tokens[index + 1]) ? tokens[index + 2] : undefined;
  const escape = uescape?.kind === 'string' && uescape.text.length === 1 ? uescape.text : '\\';
  return unicodeIdentifier(token.text, escape).toLowerCase();
};

const refusedName = (name: string): string => `Refused: ${name} (it reaches outside a read-only query: server files, large objects, notifications, other connections or sessions)`;

/** The first reason `tokens` break the rule, or null. */
const refusal = (tokens: ReadonlyArray<SqlToken>, leading: ReadonlySet<string>, leadingText: string, refused: (name: string) => boolean): string | null => {
  let first = 0;
  while (tokens[first]?.kind === 'punct' && tokens[first]?.text === '(') first += 1;
  const head = tokens[first];
  if (head?.kind !== 'word' || !leading.has(head.text.toUpperCase())) return `Only ${leadingText} statements are allowed`;
  const semicolon = tokens.findIndex((token) => token.kind === 'semicolon');
  if (semicolon !== -1 && semicolon !== tokens.length - 1) return 'Only one statement is allowed';
  for (const [index, token] of tokens.entries()) {
    if (token.kind === 'quoted' && tokens[index + (isUescape(tokens[index + 1]) ? 3 : 1)]?.text === '(') {
      const name = quotedName(tokens, index);
      if (refused(name)) return refusedName(name);
    }
    if (token.kind !== 'word') continue;
    const word = token.text.toUpperCase();
    if (BLOCKED.has(word)) return `Blocked keyword: ${word}`;
    if (word === 'INTO') return 'SELECT ... INTO is not allowed (it creates a table or writes a file)';
    if (refused(token.text.toLowerCase())) return refusedName(token.text.toLowerCase());
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
    const reason = refusal(tokens, leading, leadingText, REFUSED[rules.dialect]);
    if (reason !== null) return { ok: false, reason };
  }
  return { ok: true };
};
