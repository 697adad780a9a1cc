import { expect } from 'chai';
import fc from 'fast-check';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2';
import type pg from 'pg';
import { mysqlTarget } from '../../ops/query/MysqlTarget.ts';
import { postgresTarget } from '../../ops/query/PostgresTarget.ts';
import type { QueryTarget } from '../../shared/ports/QueryTarget.ts';
import { checkStatement, statementReadings, type SqlDialect } from '../../shared/query/checkStatement.ts';
import type { SqlToken } from '../../shared/query/sqlTokens.ts';
import { queryRequest } from '../support/cloud/queryRequest.ts';
import { MARIADB, POSTGRES, postgresClient, requireDatabase } from '../support/databases.ts';

/**
 * The statement check never disagrees with the server: statements are generated of string
 * literals (every quoting of the dialect, with quotes, backslashes, comment openers and line ends
 * inside), quoted identifiers and comments (`--` ended by `\n` or, for PostgreSQL, a lone `\r`;
 * MySQL `#`; block comments, nested for PostgreSQL), then
 *  - the check's own tokens say which columns the statement has: `<string> AS <quoted>` each;
 *  - the server's parse says the same through its answer: the statement runs through the target, as
 *    the endpoint runs it (a new session, the same driver, the same bytes on the wire), and the
 *    columns' names and values must be the check's.
 * A statement the two read differently comes back with other columns, other values, or an error.
 * In every character set a connection may name: each MySQL charset mysql2 knows (with the
 * characters whose encoding in it holds a 0x5C, 0x27, 0x22 or 0x60 byte, as mysql2's iconv-lite
 * writes them), and each PostgreSQL client encoding, set as a role's default.
 */

const RUNS = 20;
const suffix = randomBytes(4).toString('hex');

/** mysql2's own iconv-lite: the bytes it would send for a charset. */
const iconv = createRequire(createRequire(import.meta.url).resolve('mysql2'))('iconv-lite') as { encodingExists(name: string): boolean; encode(text: string, encoding: string): Buffer };
const MYSQL_CHARSETS = Object.keys((mysql as unknown as { Charsets: Record<string, number> }).Charsets).filter((name) => !name.includes('_'));
const ENCODING_OF = (mysql as unknown as { CharsetToEncoding: string[]; Charsets: Record<string, number> });

/** Up to `count` characters whose encoding in `encoding` holds a byte the lexers care about after its first byte. */
const trickyCharacters = (encoding: string, count = 12): string[] => {
  if (!iconv.encodingExists(encoding) || /^(utf|cesu|binary|ucs)/i.test(encoding)) return [];
  const found: string[] = [];
  for (let code = 0x80; code <= 0xffff && found.length < count; code += 1) {
    if (code >= 0xd800 && code <= 0xdfff) continue;
    const bytes = iconv.encode(String.fromCharCode(code), encoding);
    if (bytes.length > 1 && [...bytes.subarray(1)].some((byte) => byte === 0x5c || byte === 0x27 || byte === 0x22 || byte === 0x60)) found.push(String.fromCharCode(code));
  }
  return found;
};

const BASE = ["'", '"', '`', '\\', '$', '-', '#', '/', '*', ';', ' ', '\n', '\r', '\t', 'a', 'Z', '0', 'é', 'Ł', 'ā', 'Ё', '中', '€', '😀', 'DROP', 'INTO', '--', '/*', '*/'];
const ALIAS = ['a', 'Z', '_', '0', 'é', 'Ł', '中', '€', '"', '`', "'", '\\', '$', '-', '#', '*', '/'];

type Piece = { value: string; alias: string; literal: (value: string) => string; comment: string };

/** One column of the statement: a literal, its alias, and the comment after it. */
const column = (dialect: 'postgresql' | 'mysql', extra: string[]): fc.Arbitrary<Piece> => {
  const content = fc.string({ maxLength: 16, unit: fc.constantFrom(...BASE, ...extra) });
  const alias = fc.string({ minLength: 1, maxLength: 6, unit: fc.constantFrom(...ALIAS, ...extra.filter((char) => !/\s/.test(char))) });
  const line = (end: string) => content.filter((text) => !text.includes('\n') && !(dialect === 'postgresql' && text.includes('\r'))).map((text) => `-- ${text}${end}`);
  const block = content.filter((text) => !text.includes('*/') && !text.includes('/*') && !text.endsWith('/') && !text.startsWith('*') && !text.startsWith('!') && !text.startsWith('M!')).map((text) => `/*${text}*/`);
  const comments =
    dialect === 'postgresql'
      ? fc.oneof(fc.constant(''), line('\n'), line('\r'), block, block.map((text) => `/* outer ${text} outer */`))
      : fc.oneof(fc.constant(''), line('\n'), content.filter((text) => !text.includes('\n')).map((text) => `# ${text}\n`), block);
  const literals: Array<(value: string) => string> =
    dialect === 'postgresql'
      ? [(value) => `'${value.replaceAll("'", "''")}'`, (value) => `E'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`, (value) => `$x$${value}$x$`]
      : [(value) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`, (value) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`, (value) => `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`];
  return fc
    .record({ value: content, alias, literal: fc.constantFrom(...literals), comment: comments })
    // A dollar-quoted value may not hold its own closing tag.
    .filter((piece) => !piece.literal('').startsWith('$') || `${piece.value}$x$`.indexOf('$x$') === piece.value.length);
};

const statementOf = (dialect: 'postgresql' | 'mysql', pieces: Piece[]): string => {
  const quote = (alias: string) => (dialect === 'postgresql' ? `"${alias.replaceAll('"', '""')}"` : `\`${alias.replaceAll('`', '``')}\``);
  return `SELECT ${pieces.map((piece) => `${piece.literal(piece.value)} AS ${quote(piece.alias)} ${piece.comment}`).join(', ')}`;
};

/** The columns the check's tokens give: `<string> AS <quoted>` separated by commas; null when the tokens are not that. */
const columnsByCheck = (tokens: SqlToken[]): { names: string[]; values: string[] } | null => {
  const names: string[] = [];
  const values: string[] = [];
  let at = 1;
  while (at < tokens.length) {
    const [value, as, name, comma] = tokens.slice(at, at + 4);
    if (value?.kind !== 'string' || as?.kind !== 'word' || as.text.toUpperCase() !== 'AS' || name?.kind !== 'quoted') return null;
    values.push(value.text);
    names.push(name.text);
    at += 3;
    if (at === tokens.length) break;
    if (comma?.text !== ',') return null;
    at += 1;
  }
  return { names, values };
};

/** For each generated statement: the check passes, its tokens are the generator's columns, and the server answers those columns. */
const agree = async (dialect: 'postgresql' | 'mysql', target: QueryTarget, extra: string[], label: string): Promise<void> => {
  await fc.assert(
    fc.asyncProperty(fc.array(column(dialect, extra), { minLength: 1, maxLength: 4 }), async (pieces) => {
      const sql = statementOf(dialect, pieces);
      const shown = `${label}: ${JSON.stringify(sql)}`;
      expect(checkStatement(sql, { dialect: dialect as SqlDialect }), shown).to.deep.equal({ ok: true });
      const [tokens] = statementReadings(sql, dialect);
      const byCheck = columnsByCheck(tokens ?? []);
      expect(byCheck, shown).to.deep.equal({ names: pieces.map((piece) => piece.alias), values: pieces.map((piece) => piece.value) });
      const answer = await target.execute(queryRequest(sql)).catch((error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }));
      expect(answer, shown).to.deep.include({ columns: byCheck?.names, rows: [byCheck?.values] });
    }),
    { numRuns: RUNS },
  );
};

describe('the statement check reads SQL as the server does (check tokens against the server parse, every character set)', function () {
  this.timeout(300_000);

  describe('given MariaDB and each charset a connection may name', () => {
    before(async function () {
      await requireDatabase(this, 'mariadb');
    });
    for (const charset of MYSQL_CHARSETS) {
      it(`when statements are written for a ${charset.toLowerCase()} connection, then the server reads the check's columns`, async () => {
        const encoding = ENCODING_OF.CharsetToEncoding[ENCODING_OF.Charsets[charset] as number] ?? 'utf8';
        const target = mysqlTarget({ itemType: 'connection.mysql', params: { ...MARIADB, charset: charset.toLowerCase() } });
        await agree('mysql', target, trickyCharacters(encoding), charset);
      });
    }
    it('when the big5 trick of the review is sent, then the check and the server read the same two strings', async () => {
      const target = mysqlTarget({ itemType: 'connection.mysql', params: { ...MARIADB, charset: 'big5' } });
      const sql = "SELECT 'Ě' AS `a`, ' INTO OUTFILE ''/tmp/qd-lexing'' -- ' AS `b`";
      expect(columnsByCheck(statementReadings(sql, 'mysql')[0] ?? [])).to.deep.equal({ names: ['a', 'b'], values: ['Ě', " INTO OUTFILE '/tmp/qd-lexing' -- "] });
      expect((await target.execute(queryRequest(sql))).rows).to.deep.equal([['Ě', " INTO OUTFILE '/tmp/qd-lexing' -- "]]);
    });
  });

  describe('given PostgreSQL and each client encoding a role may default to', () => {
    const role = `qd_lexing_${suffix}`;
    let direct: pg.Client;
    const encodings: string[] = [];
    before(async function () {
      await requireDatabase(this, 'postgresql');
      direct = await postgresClient();
      await direct.query(`CREATE ROLE ${role} LOGIN`);
      // The client encodings this server converts to and from its own.
      for (const name of ['UTF8', 'SQL_ASCII', 'BIG5', 'EUC_CN', 'EUC_JP', 'EUC_JIS_2004', 'EUC_KR', 'EUC_TW', 'GB18030', 'GBK', 'ISO_8859_5', 'ISO_8859_6', 'ISO_8859_7', 'ISO_8859_8', 'JOHAB', 'KOI8R', 'KOI8U', 'LATIN1', 'LATIN2', 'LATIN3', 'LATIN4', 'LATIN5', 'LATIN6', 'LATIN7', 'LATIN8', 'LATIN9', 'LATIN10', 'MULE_INTERNAL', 'SJIS', 'SHIFT_JIS_2004', 'UHC', 'WIN866', 'WIN874', 'WIN1250', 'WIN1251', 'WIN1252', 'WIN1253', 'WIN1254', 'WIN1255', 'WIN1256', 'WIN1257', 'WIN1258']) {
        try {
          await direct.query(`SET client_encoding = '${name}'`);
          encodings.push(name);
        } catch {
          // Not convertible from this database's encoding.
        }
      }
      await direct.query("SET client_encoding = 'UTF8'");
      expect(encodings).to.include.members(['SJIS', 'BIG5', 'GBK', 'UTF8']);
    });
    after(async () => {
      await direct?.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
      await direct?.end();
    });
    it('when statements are written for a role whose default client_encoding is each of them, then the server reads the check\'s columns', async () => {
      const target = postgresTarget({ itemType: 'connection.postgresql', params: { ...POSTGRES, user: role } });
      for (const encoding of encodings) {
        await direct.query(`ALTER ROLE ${role} SET client_encoding = '${encoding}'`);
        await agree('postgresql', target, [], encoding);
      }
    });
  });
});
