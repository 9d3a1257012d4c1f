import { sqlError, uniqueKeyOf } from '../../../../lib/connectors/sql/errors';

/**
 * Unique violations as each driver reports them (the error objects' shapes and texts as pg, mysql2 and
 * tedious/mssql build them). PostgreSQL and MariaDB are also exercised for real in
 * test/integration/sql/exportErrors.test.ts; SQL Server is not installed here, so its texts are checked here.
 */
describe('unique violations', () => {
  const pg = Object.assign(new Error('duplicate key value violates unique constraint "people_mail_key"'), {
    code: '23505',
    constraint: 'people_mail_key',
    detail: 'Key (mail)=(secret-looking@example.test) already exists.',
  });
  const mysql = Object.assign(new Error("Duplicate entry 'secret-looking@example.test' for key 'people.mail'"), { errno: 1062, code: 'ER_DUP_ENTRY' });
  const mssqlPk = Object.assign(
    new Error("Violation of PRIMARY KEY constraint 'PK_people'. Cannot insert duplicate key in object 'dbo.people'. The duplicate key value is (E001)."),
    { number: 2627 },
  );
  const mssqlIndex = Object.assign(
    new Error(
      "Cannot insert duplicate key row in object 'dbo.people' with unique index 'ix_people_mail'. The duplicate key value is (secret-looking@example.test).",
    ),
    { number: 2601 },
  );

  test('the key each driver names', () => {
    expect(uniqueKeyOf(pg)).toEqual({ name: 'people_mail_key', columns: ['mail'], value: 'secret-looking@example.test' });
    expect(uniqueKeyOf(mysql)).toEqual({ name: 'people.mail', value: 'secret-looking@example.test' });
    expect(uniqueKeyOf(mssqlPk)).toEqual({ name: 'PK_people', value: 'E001' });
    expect(uniqueKeyOf(mssqlIndex)).toEqual({ name: 'ix_people_mail', value: 'secret-looking@example.test' });
    expect(uniqueKeyOf({ detail: 'Key (tenant, "Login")=(a, b) already exists.' }).columns).toEqual(['tenant', 'Login']);
    expect(uniqueKeyOf(undefined)).toEqual({});
  });

  test('sqlError: already_exists, naming the key, never the duplicated value', () => {
    const cases: Array<[Error, 'postgres' | 'mysql' | 'mssql', string]> = [
      [pg, 'postgres', "the unique key 'people_mail_key' (mail)"],
      [mysql, 'mysql', "the unique key 'people.mail'"],
      [mssqlPk, 'mssql', "the unique key 'PK_people'"],
      [mssqlIndex, 'mssql', "the unique key 'ix_people_mail'"],
    ];
    for (const [err, dialect, key] of cases) {
      const e = sqlError(err, dialect, [], 'query');
      expect(e.code).toBe('already_exists');
      expect(e.retriable).toBe(false);
      expect(e.message).toBe(`Another row already has the same value in ${key}.`);
      expect(e.message).not.toContain('secret-looking');
      expect(e.message).not.toContain('E001');
    }
  });
});

/**
 * PostgreSQL's `detail` on other constraint violations: a foreign key's (the missing or still referenced key,
 * an identifier) is shown; a check or not-null violation's ("Failing row contains (...)", the whole row) is not.
 * The real server's texts are exercised in test/integration/sql/exportState.test.ts.
 */
describe('other constraint violations on PostgreSQL', () => {
  test("a foreign key's detail is shown, the missing key named", () => {
    const fk = Object.assign(new Error('insert or update on table "staff" violates foreign key constraint "staff_manager_id_fkey"'), {
      code: '23503',
      detail: 'Key (manager_id)=(E1097) is not present in table "staff".',
    });
    const e = sqlError(fk, 'postgres', [], 'query');
    expect(e.code).toBe('constraint_violation');
    expect(e.message).toBe(
      'insert or update on table "staff" violates foreign key constraint "staff_manager_id_fkey": Key (manager_id)=(E1097) is not present in table "staff".',
    );
    const held = Object.assign(new Error('update or delete on table "staff" violates foreign key constraint "staff_manager_id_fkey" on table "staff"'), {
      code: '23503',
      detail: 'Key (employee_id)=(E1001) is still referenced from table "staff".',
    });
    expect(sqlError(held, 'postgres', [], 'query').message).toContain(': Key (employee_id)=(E1001) is still referenced from table "staff".');
  });

  test("a check violation's detail, which quotes the whole row, is not shown; secrets are redacted", () => {
    const check = Object.assign(new Error('new row for relation "staff" violates check constraint "staff_mail_check"'), {
      code: '23514',
      detail: 'Failing row contains (E1, Ada, Lovelace, private@example.test, null, null).',
    });
    const e = sqlError(check, 'postgres', [], 'query');
    expect(e.code).toBe('constraint_violation');
    expect(e.message).toBe('new row for relation "staff" violates check constraint "staff_mail_check"');
    const fk = Object.assign(new Error('insert or update on table "t" violates foreign key constraint "t_fk"'), {
      code: '23503',
      detail: 'Key (ref)=(hunter2-secret) is not present in table "t".',
    });
    expect(sqlError(fk, 'postgres', ['hunter2-secret'], 'query').message).not.toContain('hunter2-secret');
  });
});
