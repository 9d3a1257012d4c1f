import { bindValues, compileSql, parameterNames, quoteIdent } from '../../../../lib/connectors/sql/params';
import { validateSqlConfig } from '../../../../lib/connectors/sql';
import { SqlConnector, toScalar } from '../../../../lib/connectors/sql/sqlConnector';
import { sqlError } from '../../../../lib/connectors/sql/errors';
import type { SqlConfig } from '../../../../lib/connectors/sql/schema';

/** The named-parameter scanner and its translation per dialect (SQL Server included: no live server here). */

describe('compileSql', () => {
  test('postgres: $n per distinct name, casts and literals left alone', () => {
    const r = compileSql("SELECT :a::text, ':b', \"x:c\", $$ :d $$, $t$ :e $t$, E'\\' :f', :a -- :g\n/* :h /* :i */ */ FROM t WHERE y = :b", 'postgres');
    expect(r.statements).toHaveLength(1);
    expect(r.statements[0].text).toBe("SELECT $1::text, ':b', \"x:c\", $$ :d $$, $t$ :e $t$, E'\\' :f', $1 -- :g\n/* :h /* :i */ */ FROM t WHERE y = $2");
    expect(r.statements[0].params).toEqual(['a', 'b']);
    expect(r.names).toEqual(['a', 'b']);
    expect(r.rawPlaceholders).toEqual([]);
  });

  test('mysql: one ? per occurrence, backslash escapes, backticks and # comments skipped', () => {
    const r = compileSql("UPDATE `t:x` SET a = :a, b = 'it\\'s :no', c = \"q :no\" # :no\nWHERE id = :anchor OR id2 = :a", 'mysql');
    expect(r.statements[0].text).toBe("UPDATE `t:x` SET a = ?, b = 'it\\'s :no', c = \"q :no\" # :no\nWHERE id = ? OR id2 = ?");
    expect(r.statements[0].params).toEqual(['a', 'anchor', 'a']);
    expect(bindValues(r.statements[0], { a: "'; DROP TABLE t; --", anchor: 7 }, 'mysql')).toEqual(["'; DROP TABLE t; --", 7, "'; DROP TABLE t; --"]);
  });

  test('mssql: @p_name, brackets and N-strings skipped, values by name', () => {
    const r = compileSql("INSERT INTO [dbo].[t:1] (a, b) VALUES (:mail, N'x:y'); SELECT SCOPE_IDENTITY() AS id WHERE :mail IS NOT NULL", 'mssql');
    expect(r.statements.map((s) => s.text)).toEqual([
      "INSERT INTO [dbo].[t:1] (a, b) VALUES (@p_mail, N'x:y')",
      'SELECT SCOPE_IDENTITY() AS id WHERE @p_mail IS NOT NULL',
    ]);
    expect(bindValues(r.statements[0], { mail: 'a@b' }, 'mssql')).toEqual({ p_mail: 'a@b' });
    expect(bindValues(r.statements[0], {}, 'mssql')).toEqual({ p_mail: null });
  });

  test('statements split on top-level semicolons only', () => {
    const r = compileSql("INSERT INTO t VALUES (';', :a); ; DELETE FROM u WHERE x = :b;", 'postgres');
    expect(r.statements.map((s) => [s.text, s.params])).toEqual([
      ["INSERT INTO t VALUES (';', $1)", ['a']],
      ['DELETE FROM u WHERE x = $1', ['b']],
    ]);
  });

  test('driver placeholders written by hand are reported', () => {
    expect(compileSql('SELECT * FROM t WHERE a = ? AND b = "?"', 'mysql').rawPlaceholders).toEqual(['?']);
    expect(compileSql("SELECT * FROM t WHERE a = $1 AND b = '$2' AND c$3 = 1", 'postgres').rawPlaceholders).toEqual(['$1']);
  });

  test('a colon inside an identifier or after a digit is not a parameter; unterminated literals do not throw', () => {
    expect(parameterNames('SELECT a:b, 1:c, arr[1:2] FROM t', 'postgres')).toEqual([]);
    expect(parameterNames("SELECT ':x", 'postgres')).toEqual([]);
    expect(parameterNames('SELECT /* :x', 'mysql')).toEqual([]);
  });

  test('quoteIdent per dialect', () => {
    expect(quoteIdent('a"b', 'postgres')).toBe('"a""b"');
    expect(quoteIdent('a`b', 'mysql')).toBe('`a``b`');
    expect(quoteIdent('a]b', 'mssql')).toBe('[a]]b]');
  });
});

describe('values and errors', () => {
  test('driver values become connector values', () => {
    expect(toScalar(new Date('2024-01-02T03:04:05.678Z'))).toBe('2024-01-02T03:04:05.678Z');
    expect(toScalar(Buffer.from('hi'))).toBe('aGk=');
    expect(toScalar(12n)).toBe('12');
    expect(toScalar({ a: 1 })).toBe('{"a":1}');
    expect(toScalar(undefined)).toBeNull();
  });

  test('driver errors map to codes, with secrets redacted', () => {
    const e = sqlError(
      Object.assign(new Error('password authentication failed for user "u" (pw S3cret!)'), { code: '28P01' }),
      'postgres',
      ['S3cret!'],
      'connect',
    );
    expect(e.code).toBe('authentication_failed');
    expect(e.retriable).toBe(false);
    expect(e.message).not.toContain('S3cret!');
    expect(sqlError(Object.assign(new Error('Login failed'), { code: 'ELOGIN' }), 'mssql', [], 'connect').code).toBe('authentication_failed');
    expect(sqlError(Object.assign(new Error('Invalid object name'), { number: 208 }), 'mssql', [], 'query').code).toBe('configuration_invalid');
    expect(sqlError(Object.assign(new Error('Timeout'), { code: 'ETIMEOUT' }), 'mssql', [], 'query').code).toBe('timeout');
    expect(sqlError(Object.assign(new Error('dup'), { number: 2627 }), 'mssql', [], 'query').code).toBe('already_exists');
    expect(sqlError(Object.assign(new Error("Table 'x' doesn't exist"), { errno: 1146 }), 'mysql', [], 'query').code).toBe('configuration_invalid');
    const gone = sqlError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'mysql', [], 'connect');
    expect([gone.code, gone.retriable]).toEqual(['connection_failed', true]);
  });
});

describe('validateSqlConfig', () => {
  const base: SqlConfig = {
    dialect: 'mssql',
    host: 'db.example.test',
    database: 'hr',
    user: 'sync',
    password: 'x',
    anchorColumn: 'id',
    fullImportQuery: 'SELECT id, mail, rv FROM dbo.people',
    deltaImportQuery: 'SELECT id, mail, rv FROM dbo.people WHERE rv > :watermark',
    deltaColumn: 'rv',
  };
  test('a valid SQL Server configuration passes', () => {
    expect(validateSqlConfig({ ...base, exportStatements: { insert: 'INSERT INTO dbo.people (id, mail) VALUES (:id, :mail)' } })).toEqual([]);
  });
  test('parameters: required :watermark, none in the full query, not in comments', () => {
    const errs = validateSqlConfig({
      ...base,
      fullImportQuery: 'SELECT * FROM p WHERE a = :x',
      deltaImportQuery: 'SELECT * FROM p -- :watermark',
      deleteDetection: { mode: 'query', query: 'SELECT id FROM gone WHERE v > :since' },
      multiValueQueries: { groups: 'SELECT a, b FROM g; SELECT 1' },
    });
    expect(errs.map((e) => e.path)).toEqual([
      '/fullImportQuery',
      '/deltaImportQuery',
      '/deleteDetection/query',
      '/deleteDetection/query',
      '/multiValueQueries/groups',
    ]);
  });
});

describe('SQL Server statements the connector generates', () => {
  test('keyset page query and multi-value lookup use bracket quoting and @p_ parameters', () => {
    const c = new SqlConnector({
      dialect: 'mssql',
      host: 'h',
      database: 'd',
      user: 'u',
      password: 'p',
      anchorColumn: 'id',
      fullImportQuery: 'SELECT id, mail FROM dbo.people -- trailing comment;',
    });
    const wrap = (c as unknown as { wrap(sql: string, what: string, select: string, tail: string): { text: string; params: string[] } }).wrap.bind(c);
    const page = wrap(c.config.fullImportQuery, 'fullImportQuery', 'src.*', 'WHERE src.[id] > :after ORDER BY src.[id]');
    expect(page.text).toBe('SELECT src.* FROM (\nSELECT id, mail FROM dbo.people -- trailing comment\n) src WHERE src.[id] > @p_after ORDER BY src.[id]');
    expect(page.params).toEqual(['after']);
    expect(c.config.port).toBe(1433);
  });
});
