import { expect } from 'chai';
import fc from 'fast-check';
import { BLOCKED_KEYWORDS, checkStatement, REFUSED_NAMES, type SqlDialect } from './checkStatement.ts';

const DIALECTS: SqlDialect[] = ['postgresql', 'mysql', 'generic'];
const ok = (sql: string, dialect: SqlDialect = 'postgresql', leadingWords?: string[]) => checkStatement(sql, { dialect, ...(leadingWords ? { leadingWords } : {}) });
const reasonOf = (sql: string, dialect: SqlDialect = 'postgresql'): string | null => {
  const check = ok(sql, dialect);
  return check.ok ? null : check.reason;
};

describe('checkStatement (spec 4.10 statement rules)', () => {
  describe('given the leading word', () => {
    for (const dialect of DIALECTS) {
      it(`when ${dialect} SQL starts with SELECT, WITH or EXPLAIN in any case, after comments or parentheses, then it passes`, () => {
        for (const sql of ['SELECT 1', 'select 1', 'With x AS (SELECT 1) SELECT * FROM x', 'EXPLAIN SELECT 1', '  /* c */ SELECT 1', '-- c\nSELECT 1', '((SELECT 1)) UNION (SELECT 2)', 'SELECT 1;', 'SELECT 1; -- done']) {
          expect(ok(sql, dialect), sql).to.deep.equal({ ok: true });
        }
      });
      it(`when ${dialect} SQL starts with another word, or holds none, then it is refused as not SELECT/WITH/EXPLAIN`, () => {
        for (const sql of ['SHOW TABLES', 'VALUES (1)', 'SET x = 1', 'COPY t TO STDOUT', 'CALL p()', 'DESCRIBE t', '', '   ', '-- only a comment', ';', '(1)', "'SELECT'", '"SELECT" 1']) {
          expect(reasonOf(sql, dialect), sql).to.equal('Only SELECT, WITH or EXPLAIN statements are allowed');
        }
      });
    }
    it('when the embedded engine allows DESCRIBE, then DESCRIBE passes and the message names it', () => {
      expect(ok("DESCRIBE SELECT * FROM read_parquet('s3://b/*.parquet')", 'generic', ['SELECT', 'WITH', 'EXPLAIN', 'DESCRIBE'])).to.deep.equal({ ok: true });
      expect(ok('SHOW TABLES', 'generic', ['SELECT', 'WITH', 'EXPLAIN', 'DESCRIBE'])).to.deep.equal({ ok: false, reason: 'Only SELECT, WITH, EXPLAIN or DESCRIBE statements are allowed' });
    });
  });

  describe('given blocked keywords', () => {
    it('when one stands as a word anywhere (any case, CTE, EXPLAIN, FOR UPDATE, a column name), then it is refused naming it', () => {
      expect(reasonOf('WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d')).to.equal('Blocked keyword: DELETE');
      expect(reasonOf('EXPLAIN ANALYZE insert INTO t VALUES (1)')).to.equal('Blocked keyword: INSERT');
      expect(reasonOf('SELECT * FROM t FOR UPDATE')).to.equal('Blocked keyword: UPDATE');
      expect(reasonOf('SELECT drop FROM t')).to.equal('Blocked keyword: DROP');
      expect(reasonOf('SELECT 1delete')).to.equal('Blocked keyword: DELETE');
      expect(reasonOf('SELECT t.Create FROM t')).to.equal('Blocked keyword: CREATE');
    });
    it('when they are inside strings, quoted identifiers, dollar quotes or comments, then they pass (data, not code)', () => {
      expect(ok("SELECT * FROM logs WHERE message LIKE '%DELETE FROM%' -- DROP TABLE x")).to.deep.equal({ ok: true });
      expect(ok('SELECT "delete", "DROP TABLE x" FROM t /* TRUNCATE /* nested */ GRANT */')).to.deep.equal({ ok: true });
      expect(ok('SELECT $$ DROP TABLE t; $$, $tag$ it\'s $$ ALTER $tag$')).to.deep.equal({ ok: true });
      expect(ok("SELECT E'it\\'s DELETE'")).to.deep.equal({ ok: true });
      expect(ok('SELECT `update`, "it\\"s INSERT" # REVOKE\n FROM t', 'mysql')).to.deep.equal({ ok: true });
      expect(ok("SELECT 'a\\'b'", 'mysql')).to.deep.equal({ ok: true });
      expect(ok('SELECT updated_at, deleted, creator, alter_ego FROM t')).to.deep.equal({ ok: true });
    });
    it('when the dialect has no such quoting, then the same text is code and refused', () => {
      // MySQL has no dollar quotes, and its /*! comments run.
      expect(reasonOf('SELECT $$ DROP $$', 'mysql')).to.equal('Blocked keyword: DROP');
      expect(reasonOf('SELECT 1 /*!50000 DELETE */', 'mysql')).to.equal('Blocked keyword: DELETE');
      expect(reasonOf('SELECT 1 /*M! DROP */', 'mysql')).to.equal('Blocked keyword: DROP');
      // MySQL's `--` needs a space: `--x` is code.
      expect(reasonOf('SELECT 1 --DROP\n', 'mysql')).to.equal('Blocked keyword: DROP');
      expect(ok('SELECT 1 -- DROP\n', 'mysql')).to.deep.equal({ ok: true });
      // PostgreSQL has no `#` comments: the rest of the line is code.
      expect(reasonOf('SELECT 1 # DROP')).to.equal('Blocked keyword: DROP');
    });
    it('when readings disagree on where a literal ends, then what any reading sees as code is refused', () => {
      // With backslash escapes the string runs to the last quote; without, `; DROP` is code.
      // MySQL sessions are opened with backslash escapes on: one string.
      expect(ok("SELECT 'a\\'; DROP TABLE t; --'", 'mysql')).to.deep.equal({ ok: true });
      expect(reasonOf("SELECT 'a\\' , 'DROP TABLE t'", 'generic')).to.not.equal(null);
      // Nested or not: `DROP` is outside the comment for a non-nesting engine.
      expect(reasonOf('SELECT 1 /* /* */ DROP */', 'generic')).to.equal('Blocked keyword: DROP');
      expect(ok('SELECT 1 /* /* */ DROP */', 'postgresql')).to.deep.equal({ ok: true });
      // `#` is a comment for BigQuery but code (a column reference) for DuckDB.
      expect(reasonOf('SELECT #1 DROP', 'generic')).to.equal('Blocked keyword: DROP');
    });
    it('when PostgreSQL standard strings hold a backslash, then the quote after it ends the string', () => {
      expect(reasonOf("SELECT 'a\\'; DROP TABLE t; --'")).to.equal('Only one statement is allowed');
    });
  });

  describe('given INTO and several statements', () => {
    it('when SELECT ... INTO (a table, OUTFILE, DUMPFILE, variables), then it is refused', () => {
      const reason = 'SELECT ... INTO is not allowed (it creates a table or writes a file)';
      expect(reasonOf('SELECT * INTO new_table FROM t')).to.equal(reason);
      expect(reasonOf("SELECT * FROM t INTO OUTFILE '/tmp/x'", 'mysql')).to.equal(reason);
      expect(reasonOf("SELECT 1 INTO DUMPFILE '/tmp/x'", 'mysql')).to.equal(reason);
      expect(reasonOf('SELECT 1 INTO @v', 'mysql')).to.equal(reason);
      expect(ok("SELECT 'INTO OUTFILE' AS into_text", 'mysql')).to.deep.equal({ ok: true });
    });
    it('when a second statement follows, even an empty one, then it is refused', () => {
      for (const dialect of DIALECTS) {
        expect(reasonOf('SELECT 1; SELECT 2', dialect)).to.equal('Only one statement is allowed');
        expect(reasonOf('SELECT 1;;', dialect)).to.equal('Only one statement is allowed');
        expect(ok("SELECT ';' AS semicolon; /* end */", dialect)).to.deep.equal({ ok: true });
      }
    });
    it('when a literal, identifier or comment is unterminated, then it is refused with where it starts', () => {
      expect(reasonOf("SELECT 'abc")).to.equal('Unterminated string literal at offset 7');
      expect(reasonOf('SELECT "abc')).to.equal('Unterminated quoted identifier at offset 7');
      expect(reasonOf('SELECT 1 /* abc')).to.equal('Unterminated comment at offset 9');
      expect(reasonOf('SELECT $x$ abc $y$')).to.equal('Unterminated dollar-quoted string at offset 7');
      expect(reasonOf('SELECT 1 /*! 1', 'mysql')).to.match(/^Unterminated comment/);
    });
  });

  describe('given names that act outside a read-only query (large objects, server files, notifications, other connections)', () => {
    const refused = (sql: string, dialect: SqlDialect = 'postgresql'): string | null => {
      const reason = reasonOf(sql, dialect);
      return reason === null ? null : (/^Refused: (\S+)/.exec(reason)?.[1] ?? reason);
    };
    it('when PostgreSQL SQL calls a large-object function, in any case, qualified or quoted, then it is refused naming it', () => {
      expect(refused("SELECT lo_import('/etc/passwd')")).to.equal('lo_import');
      expect(refused("SELECT LO_EXPORT(16385, '/tmp/x')")).to.equal('lo_export');
      expect(refused('SELECT pg_catalog.lo_unlink(16385)')).to.equal('lo_unlink');
      expect(refused("SELECT lo_put(16385, 0, '\\x00')")).to.equal('lo_put');
      expect(refused('SELECT * FROM lo_create(0)')).to.equal('lo_create');
      expect(refused('SELECT lowrite(0, NULL), loread(0, 1)')).to.equal('lowrite');
      expect(refused('SELECT "lo_import" (\'/etc/passwd\')')).to.equal('lo_import');
      expect(refused('SELECT "pg_catalog"."lo_import"(\'/etc/passwd\')')).to.equal('lo_import');
      // The server decodes U& identifiers before it looks the function up.
      expect(refused("SELECT U&\"lo\\005fimport\"('/etc/passwd')")).to.equal('lo_import');
      expect(refused("SELECT U&\"lo!005fimport\" UESCAPE '!' ('/etc/passwd')")).to.equal('lo_import');
    });
    it('when PostgreSQL SQL reads server files, notifies, connects elsewhere or runs SQL from a string, then it is refused', () => {
      for (const [sql, name] of [
        ["SELECT pg_read_file('/etc/passwd')", 'pg_read_file'],
        ["SELECT pg_read_binary_file('/etc/passwd')", 'pg_read_binary_file'],
        ["SELECT pg_ls_dir('/')", 'pg_ls_dir'],
        ['SELECT * FROM pg_ls_waldir()', 'pg_ls_waldir'],
        ["SELECT pg_stat_file('/etc/passwd')", 'pg_stat_file'],
        ["SELECT pg_notify('c', 'x')", 'pg_notify'],
        ["SELECT dblink_exec('dbname=test', 'DROP TABLE t')", 'dblink_exec'],
        ["SELECT * FROM dblink('dbname=test', 'SELECT 1') AS t(a int)", 'dblink'],
        ["SELECT query_to_xml('SELECT lo_import(''/etc/passwd'')', true, true, '')", 'query_to_xml'],
        ["SELECT * FROM ts_stat('SELECT 1')", 'ts_stat'],
        ['SELECT pg_terminate_backend(1)', 'pg_terminate_backend'],
        ["WITH x AS (SELECT 1) SELECT * FROM x, LATERAL (SELECT 1) y WHERE 'COPY' <> '' AND copy IS NULL", 'copy'],
      ] as const) {
        expect(refused(sql), sql).to.equal(name);
      }
    });
    it('when MySQL SQL reads or writes server files or runs a command, then it is refused (INTO OUTFILE first as INTO)', () => {
      expect(refused("SELECT LOAD_FILE('/etc/passwd')", 'mysql')).to.equal('load_file');
      expect(refused("SELECT `load_file`('/etc/passwd')", 'mysql')).to.equal('load_file');
      expect(refused("SELECT 1 /*! , load_file('/etc/passwd') */", 'mysql')).to.equal('load_file');
      expect(refused("SELECT sys_exec('id')", 'mysql')).to.equal('sys_exec');
      expect(reasonOf("SELECT 1 INTO OUTFILE '/tmp/x'", 'mysql')).to.match(/^SELECT \.\.\. INTO is not allowed/);
      expect(refused("SELECT outfile FROM t", 'mysql')).to.equal('outfile');
    });
    it('when the names stand inside literals or comments, or a quoted identifier is not called, then they are data and pass', () => {
      expect(ok("SELECT 'lo_import', $$pg_read_file$$ /* dblink */ -- pg_notify")).to.deep.equal({ ok: true });
      expect(ok('SELECT "lo_id", "copy" FROM t')).to.deep.equal({ ok: true });
      expect(ok("SELECT 'LOAD_FILE' # sys_exec", 'mysql')).to.deep.equal({ ok: true });
      expect(ok('SELECT lot_size, pg_read, blob_load FROM t')).to.deep.equal({ ok: true });
    });
    it('when the engine is generic (Redshift speaks PostgreSQL), then both lists apply', () => {
      expect(refused("SELECT lo_import('/x')", 'generic')).to.equal('lo_import');
      expect(refused("SELECT load_file('/x')", 'generic')).to.equal('load_file');
    });
    it('the documented lists hold the names the finding named', () => {
      expect(REFUSED_NAMES.postgresql).to.include.members(['lo_*', 'lowrite', 'loread', 'pg_read_file', 'pg_read_binary_file', 'pg_ls_*', 'pg_stat_file', 'dblink*', 'pg_notify', 'copy']);
      expect(REFUSED_NAMES.mysql).to.include.members(['load_file', 'outfile', 'dumpfile', 'sys_exec']);
    });
  });

  describe('given line comments ended by a lone carriage return', () => {
    it('when PostgreSQL SQL hides a word behind `-- ...\\r`, then the word is code (PostgreSQL ends the comment there) and refused', () => {
      expect(reasonOf('SELECT 1 -- c\rDELETE')).to.equal('Blocked keyword: DELETE');
      expect(reasonOf('SELECT * FROM t -- c\r FOR UPDATE')).to.equal('Blocked keyword: UPDATE');
      expect(reasonOf('SELECT 1 -- c\r INTO x')).to.match(/^SELECT \.\.\. INTO/);
      expect(reasonOf("SELECT 1 -- c\r, lo_import('/etc/passwd')")).to.match(/^Refused: lo_import/);
      expect(ok('SELECT 1 -- DELETE\r\n, 2')).to.deep.equal({ ok: true });
    });
    it('when MySQL SQL has `-- ...\\r` or `# ...\\r`, then the comment runs on to the next \\n, as MariaDB reads it', () => {
      expect(ok('SELECT 1 -- c\rDELETE\n', 'mysql')).to.deep.equal({ ok: true });
      expect(ok('SELECT 1 # c\rDELETE\n', 'mysql')).to.deep.equal({ ok: true });
      expect(reasonOf('SELECT 1 -- c\rx\nDELETE', 'mysql')).to.equal('Blocked keyword: DELETE');
    });
    it('when the engine is generic, then either reading that sees code refuses', () => {
      expect(reasonOf('SELECT 1 -- c\rDELETE', 'generic')).to.equal('Blocked keyword: DELETE');
    });
  });

  describe('properties', () => {
    /** Pieces of SQL whose role is known: bare words (code) and data or comments holding anything. */
    type Piece = { code: boolean; text: string; word?: string };
    const VOCABULARY = ['a', 'b', 'FROM', 'WHERE', 'AND', 'x_1', 'updated_at', 'select', ...BLOCKED_KEYWORDS, 'Delete', 'into'];
    const content = fc.string({ maxLength: 20, unit: fc.constantFrom('a', ' ', "'", '"', '`', '\\', '$', ';', '*', '/', '-', '#', '\n', 'DROP', 'DELETE', 'INTO') });
    const pieces = (dialect: SqlDialect): fc.Arbitrary<Piece> => {
      const word = fc.constantFrom(...VOCABULARY).map((text): Piece => ({ code: true, text, word: text }));
      // Quotes doubled, and backslashes doubled where a reading may take them as escapes: the
      // literal then ends at the same place under every reading.
      const escape = (text: string, quote: string) => text.split(quote).join(quote + quote).split('\\').join(dialect === 'postgresql' ? '\\' : '\\\\');
      const string = content.map((text): Piece => ({ code: false, text: `'${escape(text, "'")}'` }));
      const quoted = content.map((text): Piece => ({ code: false, text: dialect === 'mysql' ? `\`${text.split('`').join('``')}\`` : `"${escape(text, '"')}"` }));
      const lineComment = content.filter((text) => !text.includes('\n')).map((text): Piece => ({ code: false, text: `-- ${text}\n` }));
      const blockComment = content.filter((text) => !text.includes('*/') && !text.includes('/*') && !text.endsWith('/') && !text.startsWith('!') && !text.startsWith('*')).map((text): Piece => ({ code: false, text: `/*${text}*/` }));
      const dollar = content.filter((text) => !text.includes('$')).map((text): Piece => ({ code: false, text: `$q$${text}$q$` }));
      return dialect === 'mysql' ? fc.oneof(word, string, quoted, lineComment, blockComment) : fc.oneof(word, string, quoted, lineComment, blockComment, dollar);
    };
    for (const dialect of DIALECTS) {
      it(`given ${dialect} SQL built of words, literals and comments, when checked, then it is refused exactly when a bare word is blocked or INTO`, () => {
        fc.assert(
          fc.property(fc.array(pieces(dialect), { maxLength: 12 }), (parts) => {
            const sql = `SELECT ${parts.map((part) => part.text).join(' ')}`;
            const blocked = parts.some((part) => part.word !== undefined && ([...BLOCKED_KEYWORDS] as string[]).concat('INTO').includes(part.word.toUpperCase()));
            const check = checkStatement(sql, { dialect });
            expect(check.ok, `${sql} -> ${JSON.stringify(check)}`).to.equal(!blocked);
          }),
          { numRuns: 500 },
        );
      });
      it(`given any text (${dialect}), when checked, then the check answers without throwing, and appending a second statement never passes`, () => {
        fc.assert(
          fc.property(fc.string({ maxLength: 80 }), (text) => {
            const check = checkStatement(text, { dialect });
            expect(check).to.have.property('ok');
            if (check.ok) expect(checkStatement(`${text}\n; DROP TABLE t`, { dialect }).ok).to.equal(false);
          }),
          { numRuns: 1000 },
        );
      });
    }
  });
});
