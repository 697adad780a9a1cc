/**
 * A SQL lexer for the statement check of POST /api/v1/query/execute (spec 4.10): it tells code
 * (words, numbers, punctuation, `;`) from data (string literals, quoted identifiers, dollar-quoted
 * strings) and from comments, so that a keyword is judged by where it stands, not by its letters.
 *
 * Dialects disagree on where a literal or a comment ends (a backslash before a quote, `#`, nested
 * block comments, `$$`, MySQL's executable `/*! ... *\/` comments). A lexer that ends a string
 * earlier or later than the database does could hide code from the check; so each dialect is lexed
 * under every reading its servers may use (`Lexing`), and the check refuses a statement that any
 * reading refuses (shared/query/checkStatement.ts).
 */

export type SqlTokenKind = 'word' | 'number' | 'string' | 'quoted' | 'punct' | 'semicolon';

export interface SqlToken {
  kind: SqlTokenKind;
  /** word: as written; string / quoted: the literal's value (quotes and escapes removed); others: the text. */
  text: string;
  /** Offset in the statement. */
  at: number;
}

/** One reading of the text: how this lexer treats each point dialects disagree on. */
export interface Lexing {
  /** `\` escapes the next character inside '...' and "..." (MySQL by default, BigQuery). */
  backslashEscapes: boolean;
  /** `/* /* *\/ *\/` nests (PostgreSQL, DuckDB). */
  nestedComments: boolean;
  /** `#` starts a comment to the end of the line (MySQL, BigQuery). */
  hashComments: boolean;
  /** `--` starts a comment only when followed by whitespace or the end (MySQL); otherwise always. */
  dashCommentNeedsSpace: boolean;
  /**
   * A lone `\r` ends a `--` (or `#`) comment as `\n` does (PostgreSQL: its scanner's newline is
   * `[\n\r]`); false: only `\n` does (MySQL and MariaDB read on to the next `\n`).
   */
  carriageReturnEndsLine: boolean;
  /** `$tag$ ... $tag$` is a string (PostgreSQL, DuckDB). */
  dollarQuotes: boolean;
  /** `/*! ... *\/` and `/*M! ... *\/` hold code the server runs (MySQL, MariaDB). */
  executableComments: boolean;
  /** `E'...'` is a string with backslash escapes (PostgreSQL). */
  escapeStringPrefix: boolean;
  /** "..." is a quoted identifier (standard SQL); false: a string literal (MySQL's default). Data either way. */
  doubleQuotedIdentifiers: boolean;
  /** `...` is a quoted identifier (MySQL, BigQuery, Athena); false: the backtick is punctuation. */
  backtickIdentifiers: boolean;
}

export class SqlLexError extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(message);
    this.name = 'SqlLexError';
  }
}

/** Letters, digits, `_` and `$` continue a word, as do all non-ASCII characters (PostgreSQL and MySQL identifiers). */
const isWordStart = (char: string): boolean => /[A-Za-z_]/.test(char) || char.charCodeAt(0) >= 0x80;
const isWordPart = (char: string): boolean => /[A-Za-z0-9_$]/.test(char) || char.charCodeAt(0) >= 0x80;
const isDigit = (char: string | undefined): boolean => char !== undefined && char >= '0' && char <= '9';
/** MySQL: `-- ` needs a space or control character after it. */
const isSpaceOrControl = (char: string | undefined): boolean => char === undefined || char <= ' ';

/**
 * The tokens of `sql` under one reading, comments and whitespace dropped; throws SqlLexError on an
 * unterminated literal, identifier or comment.
 */
export const tokenize = (sql: string, lexing: Lexing): SqlToken[] => {
  const tokens: SqlToken[] = [];
  /** Depth of open `/*!` executable comments: their `*\/` closes them and is not code. */
  let executable = 0;
  let at = 0;
  const length = sql.length;

  /** The literal quoted by `quote` opening at `open`: a doubled quote is one quote; `\` escapes when `escapes`. */
  const quotedUntil = (open: number, quote: string, escapes: boolean, what: string): [string, number] => {
    let value = '';
    let index = open + 1;
    for (;;) {
      if (index >= length) throw new SqlLexError(`Unterminated ${what}`, open);
      const char = sql[index] as string;
      if (escapes && char === '\\') {
        if (index + 1 >= length) throw new SqlLexError(`Unterminated ${what}`, open);
        value += sql[index + 1];
        index += 2;
      } else if (char === quote) {
        if (sql[index + 1] === quote) {
          value += quote;
          index += 2;
        } else {
          return [value, index + 1];
        }
      } else {
        value += char;
        index += 1;
      }
    }
  };

  /** The end of the block comment opening at `open` (after its `*\/`). */
  const blockCommentEnd = (open: number): number => {
    let depth = 1;
    let index = open + 2;
    while (depth > 0) {
      if (index >= length) throw new SqlLexError('Unterminated comment', open);
      if (sql.startsWith('*/', index)) {
        depth -= 1;
        index += 2;
      } else if (lexing.nestedComments && sql.startsWith('/*', index)) {
        depth += 1;
        index += 2;
      } else {
        index += 1;
      }
    }
    return index;
  };

  while (at < length) {
    const char = sql[at] as string;
    const next = sql[at + 1];
    if (char <= ' ' || char === '\u00a0' || char === '\ufeff') {
      at += 1;
    } else if ((char === '-' && next === '-' && (!lexing.dashCommentNeedsSpace || isSpaceOrControl(sql[at + 2]))) || (char === '#' && lexing.hashComments)) {
      at = lineEnd(sql, at, lexing.carriageReturnEndsLine);
    } else if (char === '/' && next === '*') {
      if (lexing.executableComments && (sql[at + 2] === '!' || (sql[at + 2] === 'M' && sql[at + 3] === '!'))) {
        // The server runs what is inside (after an optional version number): it is lexed as code.
        at += sql[at + 2] === '!' ? 3 : 4;
        while (isDigit(sql[at])) at += 1;
        executable += 1;
      } else {
        at = blockCommentEnd(at);
      }
    } else if (char === '*' && next === '/' && executable > 0) {
      executable -= 1;
      at += 2;
    } else if (char === "'") {
      const [value, end] = quotedUntil(at, "'", lexing.backslashEscapes, 'string literal');
      tokens.push({ kind: 'string', text: value, at });
      at = end;
    } else if (char === '"') {
      const identifier = lexing.doubleQuotedIdentifiers;
      const [value, end] = quotedUntil(at, '"', !identifier && lexing.backslashEscapes, identifier ? 'quoted identifier' : 'string literal');
      tokens.push({ kind: identifier ? 'quoted' : 'string', text: value, at });
      at = end;
    } else if (char === '`' && lexing.backtickIdentifiers) {
      const [value, end] = quotedUntil(at, '`', false, 'quoted identifier');
      tokens.push({ kind: 'quoted', text: value, at });
      at = end;
    } else if (char === '$' && lexing.dollarQuotes && dollarTagAt(sql, at) !== null) {
      const tag = dollarTagAt(sql, at) as string;
      const close = sql.indexOf(tag, at + tag.length);
      if (close === -1) throw new SqlLexError('Unterminated dollar-quoted string', at);
      tokens.push({ kind: 'string', text: sql.slice(at + tag.length, close), at });
      at = close + tag.length;
    } else if (isDigit(char) || (char === '.' && isDigit(next))) {
      // A number ends where its digits, point and exponent end: letters after it start a new word
      // (`1delete` is refused as DELETE), which can only refuse more than the database would.
      const start = at;
      while (isDigit(sql[at])) at += 1;
      if (sql[at] === '.') {
        at += 1;
        while (isDigit(sql[at])) at += 1;
      }
      if ((sql[at] === 'e' || sql[at] === 'E') && (isDigit(sql[at + 1]) || ((sql[at + 1] === '+' || sql[at + 1] === '-') && isDigit(sql[at + 2])))) {
        at += 2;
        while (isDigit(sql[at])) at += 1;
      }
      tokens.push({ kind: 'number', text: sql.slice(start, at), at: start });
    } else if (isWordStart(char)) {
      const start = at;
      while (at < length && isWordPart(sql[at] as string)) at += 1;
      const word = sql.slice(start, at);
      if (lexing.escapeStringPrefix && (word === 'E' || word === 'e') && sql[at] === "'") {
        const [value, end] = quotedUntil(at, "'", true, 'string literal');
        tokens.push({ kind: 'string', text: value, at: start });
        at = end;
      } else {
        tokens.push({ kind: 'word', text: word, at: start });
      }
    } else if (char === ';') {
      tokens.push({ kind: 'semicolon', text: ';', at });
      at += 1;
    } else {
      tokens.push({ kind: 'punct', text: char, at });
      at += 1;
    }
  }
  if (executable > 0) throw new SqlLexError('Unterminated comment', length);
  return tokens;
};

/** Where a line comment opening at `at` ends (after its line end), or the end of the text. */
const lineEnd = (sql: string, at: number, carriageReturn: boolean): number => {
  const newline = sql.indexOf('\n', at);
  const end = carriageReturn ? firstFound(newline, sql.indexOf('\r', at)) : newline;
  return end === -1 ? sql.length : end + 1;
};

const firstFound = (a: number, b: number): number => (a === -1 ? b : b === -1 ? a : Math.min(a, b));

/**
 * The `$tag$` opening a dollar-quoted string at `at` (PostgreSQL: the tag is empty or an identifier
 * not starting with a digit), or null: `$1` is a parameter, and a `$` inside a word never gets here.
 */
const dollarTagAt = (sql: string, at: number): string | null => {
  const match = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(at, at + 66));
  return match ? match[0] : null;
};

/** Every combination of the given choices, each laid over `base`. */
export const readings = (base: Lexing, ambiguous: ReadonlyArray<keyof Lexing>): Lexing[] =>
  ambiguous.reduce<Lexing[]>((all, key) => all.flatMap((reading) => [{ ...reading, [key]: false }, { ...reading, [key]: true }]), [base]);
