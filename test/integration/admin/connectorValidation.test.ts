import { dumpTable, startService, type ServiceUnderTest } from '../../support/service';
import { folder } from '../sync/syncSupport';

/**
 * What a connector's create and update refuse, over HTTP against the running service and Azurite: errors at
 * every level listed together (top-level fields, the type's config schema, its expressions), values outside
 * a choice with the allowed values, expressions that read a name their field does not give. Every request
 * here is refused before any connection is tried (no directory server is needed), except the file
 * connectors, which are created for real.
 */
let svc: ServiceUnderTest;

beforeAll(async () => {
  svc = await startService();
});

afterAll(async () => {
  await svc?.dispose();
});

const ldapConfig = (extra: Record<string, unknown> = {}) => ({
  host: 'ldap.example.test',
  baseDN: 'dc=example,dc=test',
  bindDN: 'cn=sync,dc=example,dc=test',
  bindPassword: 'S3cret-Bind-Pa55!',
  ...extra,
});

const fileConfig = (extra: Record<string, unknown> = {}) => ({
  implementation: 'file',
  objectType: 'User',
  settings: { path: folder(), anchorColumn: 'id' },
  ...extra,
});

async function refused(method: 'POST' | 'PUT', url: string, body: unknown) {
  const before = await dumpTable('Connectors');
  const res = await svc.call(method, url, { body });
  expect(res.status).toBe(400);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.body.code).toBe('validation_failed');
  expect(await dumpTable('Connectors')).toEqual(before);
  return res.body.errors as { path: string; message: string }[];
}

describe('errors at several levels are all listed', () => {
  it('create: a top-level error does not hide the errors inside config (schema and expressions)', async () => {
    const errors = await refused('POST', 'connectors', {
      name: '   ',
      type: 'ldap',
      colour: 'red',
      config: ldapConfig({ port: 70000, security: 'tls', exportDnTemplate: '"cn=" + dnEscape(source.cn) + "," + basedn' }),
    });
    expect(errors).toEqual(
      expect.arrayContaining([
        { path: '/name', message: expect.any(String) },
        { path: '/colour', message: 'is not a known property' },
        { path: '/config/port', message: 'must be <= 65535' },
        { path: '/config/security', message: 'must be one of: ldaps, starttls, none' },
        {
          path: '/config/exportDnTemplate',
          message: expect.stringContaining("'basedn' is not defined at line 1, column 37 (offset 36) (did you mean 'baseDN'?)"),
        },
      ]),
    );
    expect(errors).toHaveLength(5);
  });

  it('create: inside config, a schema error does not hide an expression error', async () => {
    const errors = await refused('POST', 'connectors', {
      name: 'Directory',
      type: 'ldap',
      config: ldapConfig({ port: 0, provisioningCondition: 'department == "Sales"' }),
    });
    expect(errors).toEqual([
      { path: '/config/port', message: 'must be >= 1' },
      { path: '/config/provisioningCondition', message: expect.stringContaining("'department' is not defined at line 1, column 1") },
    ]);
  });

  it('update: a top-level error does not hide the config errors (checked by the stored type)', async () => {
    const created = await svc.call('POST', 'connectors', { body: { name: 'Files for update', type: 'custom', config: fileConfig() } });
    expect(created.status).toBe(201);
    const errors = await refused('PUT', `connectors/${created.body.id}`, {
      name: '',
      config: fileConfig({ objectType: 7, provisioningCondition: 'sourc.enabled' }),
    });
    expect(errors).toEqual([
      { path: '/name', message: 'must NOT have fewer than 1 characters' },
      { path: '/name', message: expect.stringContaining('must match pattern') },
      { path: '/config/objectType', message: 'must be string' },
      {
        path: '/config/provisioningCondition',
        message: expect.stringContaining("'sourc' is not defined at line 1, column 1 (offset 0) (did you mean 'source'?)"),
      },
    ]);
  });
});

describe('expression fields of a config', () => {
  it('each field has its own names: a DN template reads baseDN, a provisioning condition does not', async () => {
    const errors = await refused('POST', 'connectors', {
      name: 'Directory',
      type: 'ldap',
      config: ldapConfig({ provisioningCondition: 'object.dn.endsWith(baseDN)' }),
    });
    expect(errors).toEqual([
      {
        path: '/config/provisioningCondition',
        message: "'baseDN' is not defined at line 1, column 20 (offset 19); the names this script can read are source, object",
      },
    ]);
    const template = await refused('POST', 'connectors', {
      name: 'Directory',
      type: 'ldap',
      config: ldapConfig({ exportDnTemplate: '"cn=" + object.cn + "," + baseDN' }),
    });
    expect(template).toEqual([
      {
        path: '/config/exportDnTemplate',
        message: "'object' is not defined at line 1, column 9 (offset 8); the names this script can read are source, baseDN, objectType, container",
      },
    ]);
  });

  it('a provisioning condition over source and object is accepted', async () => {
    const res = await svc.call('POST', 'connectors', {
      body: {
        name: 'Files with a condition',
        type: 'custom',
        config: fileConfig({ provisioningCondition: 'source.department == "Sales" || !isEmpty(object.employeeId)' }),
      },
    });
    expect(res.status).toBe(201);
  });
});

describe('config.deprovisioning', () => {
  const sqlConfig = (extra: Record<string, unknown> = {}) => ({
    dialect: 'postgres',
    host: 'db.example.test',
    database: 'hr',
    user: 'sync',
    password: 'S3cret-Db-Pa55!',
    fullImportQuery: 'SELECT id, name FROM people',
    anchorColumn: 'id',
    ...extra,
  });

  it('bad values are all listed for every type that can export; an action outside the choice lists the allowed values', async () => {
    const bad = { action: 'archive', graceDays: -2, onConditionFalse: 'yes', disableAttributes: {} };
    const expected = [
      { path: '/config/deprovisioning/action', message: 'must be one of: delete, disable, none' },
      { path: '/config/deprovisioning/disableAttributes', message: 'must NOT have fewer than 1 properties' },
      { path: '/config/deprovisioning/graceDays', message: 'must be >= 0' },
      { path: '/config/deprovisioning/onConditionFalse', message: 'must be boolean' },
    ];
    for (const [type, config] of [
      ['ldap', ldapConfig({ deprovisioning: bad })],
      ['active_directory', ldapConfig({ deprovisioning: bad })],
      ['sql', sqlConfig({ deprovisioning: bad })],
      ['custom', fileConfig({ deprovisioning: bad })],
    ] as const) {
      const errors = await refused('POST', 'connectors', { name: `Bad ${type}`, type, config });
      expect(errors).toEqual(expect.arrayContaining(expected));
      expect(errors.filter((e) => e.path.startsWith('/config/deprovisioning'))).toHaveLength(expected.length);
    }
  });

  it('disable without disableAttributes is a 400 naming the field on a type other than active_directory', async () => {
    const errors = await refused('POST', 'connectors', {
      name: 'Files disable',
      type: 'custom',
      config: fileConfig({ deprovisioning: { action: 'disable' } }),
    });
    expect(errors).toEqual([{ path: '/config/deprovisioning/disableAttributes', message: expect.stringContaining("is required with action 'disable'") }]);
    const sql = await refused('POST', 'connectors', { name: 'SQL disable', type: 'sql', config: sqlConfig({ deprovisioning: { action: 'disable' } }) });
    expect(sql).toContainEqual({ path: '/config/deprovisioning/disableAttributes', message: expect.stringContaining("is required with action 'disable'") });
  });

  it('a file target with a disable, a grace of half a day and onConditionFalse is created, the defaults shown', async () => {
    const res = await svc.call('POST', 'connectors', {
      body: {
        name: 'Files deprovisioning',
        type: 'custom',
        config: fileConfig({
          deprovisioning: { action: 'disable', disableAttributes: { status: 'disabled', active: false }, graceDays: 0.5, onConditionFalse: true },
        }),
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.config.deprovisioning).toEqual({
      action: 'disable',
      disableAttributes: { status: 'disabled', active: false },
      graceDays: 0.5,
      onConditionFalse: true,
      deadlineMinutes: 60,
      orphanAction: 'disable',
    });
    const none = await svc.call('POST', 'connectors', {
      body: { name: 'Files none', type: 'custom', config: fileConfig({ deprovisioning: { action: 'none' } }) },
    });
    expect(none.status).toBe(201);
    expect(none.body.config.deprovisioning).toEqual({ action: 'none', graceDays: 0, onConditionFalse: false, deadlineMinutes: 60, orphanAction: 'disable' });
  });
});
