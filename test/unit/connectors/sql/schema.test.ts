import { connectorTypeConfig } from '../../../../lib/connectors/registry';
import { validate } from '../../../../lib/core/validation/ajv';

/** The `sql` defaults the Admin API applies before storing (the integration tests cannot reach port 5432). */
describe('sql configuration defaults', () => {
  const sql = connectorTypeConfig('sql');
  const base = { host: 'h', database: 'd', user: 'u', password: 'p', anchorColumn: 'id', fullImportQuery: 'SELECT id FROM t' };
  const resolved = (config: Record<string, unknown>) => sql.defaults(validate(sql.configSchema, config) as Record<string, unknown>);

  test.each([
    ['postgres', 5432],
    ['mysql', 3306],
    ['mssql', 1433],
  ])('%s: port %d, objectType User, no overlap, timeout 30 s', (dialect, port) => {
    expect(resolved({ ...base, dialect })).toMatchObject({ port, objectType: 'User', deltaOverlapSeconds: 0, timeoutSeconds: 30 });
  });

  test('a configured port is kept', () => {
    expect(resolved({ ...base, dialect: 'postgres', port: 6543 }).port).toBe(6543);
  });

  test('sql connectors are tested against the database when saved', () => {
    expect(sql.testOnSave).toBe(true);
  });
});
