/**
 * Finding the object-store URLs a statement reads, for the embedded engine to fetch and point at
 * local copies. The rule (README, decisions): only plain single-quoted string literals in a
 * reading position are taken, namely
 *  - the first argument of a file-reading table function (read_parquet, parquet_scan, read_csv,
 *    read_csv_auto, read_json, read_json_auto, read_ndjson, read_ndjson_auto, read_json_objects,
 *    parquet_schema, parquet_metadata), either one literal or a list [ 'a', 'b' ] of literals;
 *  - a literal right after FROM, JOIN, DESCRIBE or SUMMARIZE (DuckDB's replacement scan:
 *    FROM 's3://bucket/file.parquet'), where FROM is a query's (not IS DISTINCT FROM, not inside a
 *    function's parentheses such as EXTRACT(YEAR FROM ...) or TRIM(... FROM ...)).
 * and only when the literal's text starts with <scheme>://. The statement is tokenized as DuckDB
 * reads it (line comments, nested block comments, '' inside strings, E'' strings with backslash escapes,
 * $tag$ dollar quotes, "quoted identifiers" with ""), so a URL inside a comment, an identifier, a
 * dollar-quoted or E'' string, or a literal used as a value (SELECT 's3://x') is left alone: a value
 * stays a value, and a read DuckDB cannot serve fails with its own message. Nothing is matched with
 * a regular expression over the raw text.
 */

export interface UrlLiteral {
  /** The literal's span in the statement, quotes included. */
  start: number;
  end: number;
  /** Its text, '' unescaped. */
  url: string;
}

const READERS = new Set([
  'read_parquet',
  'parquet_scan',
  'read_csv',
  'read_csv_auto',
  'read_json',
  'read_json_auto',
  'read_ndjson',
  'read_ndjson_auto',
  'read_json_objects',
  'parquet_schema',
  'parquet_metadata',
]);

type Token =
  | { kind: 'word'; name: string; start: number; end: number }
  | { kind: 'string'; value: string; plain: boolean; start: number; end: number }
  | { kind: 'punct'; text: string; start: number; end: number };

const WORD_START = /[A-Za-z_\u0080-\uffff]/;
const WORD_PART = /[A-Za-z0-9_$\u0080-\uffff]/;

/** An unterminated string, identifier or comment: the tokens end there (DuckDB refuses the statement anyway). */
const tokenize = (sql: string): Token[] => {
  const tokens: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i] as string;
    const next = sql[i + 1];
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? n : end + 1;
    } else if (c === '/' && next === '*') {
      // Nested, as in PostgreSQL (DuckDB's parser is its descendant).
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '/' && sql[i + 1] === '*') {
          depth += 1;
          i += 2;
        } else if (sql[i] === '*' && sql[i + 1] === '/') {
          depth -= 1;
          i += 2;
        } else i += 1;
      }
    } else if (c === "'") {
      const previous = tokens[tokens.length - 1];
      // A prefix glued to the quote (E'..', X'..', B'..', U&'..') makes another kind of literal.
      const prefixed = previous !== undefined && previous.end === i && (previous.kind === 'word' || (previous.kind === 'punct' && previous.text === '&'));
      const escapes = prefixed && previous.kind === 'word' && previous.name === 'e';
      let value = '';
      let j = i + 1;
      let closed = false;
      while (j < n) {
        const ch = sql[j] as string;
        if (escapes && ch === '\\') {
          value += sql[j + 1] ?? '';
          j += 2;
        } else if (ch === "'") {
          if (sql[j + 1] === "'") {
            value += "'";
            j += 2;
          } else {
            j += 1;
            closed = true;
            break;
          }
        } else {
          value += ch;
          j += 1;
        }
      }
      if (!closed) break;
      tokens.push({ kind: 'string', value, plain: !prefixed, start: i, end: j });
      i = j;
    } else if (c === '"') {
      let name = '';
      let j = i + 1;
      let closed = false;
      while (j < n) {
        if (sql[j] === '"') {
          if (sql[j + 1] === '"') {
            name += '"';
            j += 2;
          } else {
            j += 1;
            closed = true;
            break;
          }
        } else {
          name += sql[j];
          j += 1;
        }
      }
      if (!closed) break;
      // DuckDB matches identifiers without regard to case, quoted or not.
      tokens.push({ kind: 'word', name: name.toLowerCase(), start: i, end: j });
      i = j;
    } else if (c === '$' && /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.test(sql.slice(i, i + 66))) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 66))?.[0] as string;
      const close = sql.indexOf(tag, i + tag.length);
      if (close === -1) break;
      tokens.push({ kind: 'string', value: sql.slice(i + tag.length, close), plain: false, start: i, end: close + tag.length });
      i = close + tag.length;
    } else if (WORD_START.test(c)) {
      let j = i + 1;
      while (j < n && WORD_PART.test(sql[j] as string)) j += 1;
      tokens.push({ kind: 'word', name: sql.slice(i, j).toLowerCase(), start: i, end: j });
      i = j;
    } else {
      tokens.push({ kind: 'punct', text: c, start: i, end: i + 1 });
      i += 1;
    }
  }
  return tokens;
};

const URL_LIKE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

const isPunct = (token: Token | undefined, text: string): boolean => token?.kind === 'punct' && token.text === text;

/** The URL literals (any scheme) the statement reads, in order of appearance. */
export const urlLiterals = (sql: string): UrlLiteral[] => {
  const tokens = tokenize(sql);
  const found: UrlLiteral[] = [];
  const take = (token: Token) => {
    if (token.kind === 'string' && token.plain && URL_LIKE.test(token.value)) found.push({ start: token.start, end: token.end, url: token.value });
  };
  // Per open parenthesis: whether it holds a query (SELECT or FROM-first seen at its level), so
  // that FROM inside a function's parentheses (EXTRACT(YEAR FROM ...), TRIM(BOTH 'x' FROM ...)) is
  // not taken for a table's FROM. The statement's own level is a query.
  const levels: boolean[] = [true];
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i] as Token;
    if (isPunct(token, '(')) levels.push(false);
    else if (isPunct(token, ')') && levels.length > 1) levels.pop();
    if (token.kind !== 'word') continue;
    const previous = tokens[i - 1];
    if (token.name === 'select' || (token.name === 'from' && isPunct(previous, '('))) levels[levels.length - 1] = true;
    if (READERS.has(token.name) && isPunct(tokens[i + 1], '(') && !isPunct(previous, '.')) {
      const first = tokens[i + 2];
      if (first?.kind === 'string' && (isPunct(tokens[i + 3], ',') || isPunct(tokens[i + 3], ')'))) take(first);
      else if (isPunct(first, '[')) {
        const items: Token[] = [];
        let j = i + 3;
        while (tokens[j]?.kind === 'string') {
          items.push(tokens[j] as Token);
          if (isPunct(tokens[j + 1], ',')) j += 2;
          else {
            j += 1;
            break;
          }
        }
        if (items.length > 0 && isPunct(tokens[j], ']') && (isPunct(tokens[j + 1], ',') || isPunct(tokens[j + 1], ')'))) items.forEach(take);
      }
    } else if (tokens[i + 1]?.kind === 'string') {
      const scan =
        token.name === 'join' ||
        token.name === 'describe' ||
        token.name === 'summarize' ||
        (token.name === 'from' && levels[levels.length - 1] === true && !(previous?.kind === 'word' && previous.name === 'distinct'));
      if (scan) take(tokens[i + 1] as Token);
    }
  }
  return found;
};

/** A SQL string literal of `text`. */
export const sqlStringLiteral = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/** The statement with each literal's span replaced by a literal of its new text. */
export const replaceLiterals = (sql: string, replacements: ReadonlyArray<{ literal: UrlLiteral; text: string }>): string => {
  let out = sql;
  for (const { literal, text } of [...replacements].sort((a, b) => b.literal.start - a.literal.start)) {
    out = `${out.slice(0, literal.start)}${sqlStringLiteral(text)}${out.slice(literal.end)}`;
  }
  return out;
};
