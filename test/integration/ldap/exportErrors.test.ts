import { closeParkedSearches, LdapConnector } from '../../../lib/connectors/ldap';
import { connectorImplementation } from '../../../lib/connectors/registry';
import { exportChanges, hasExport, type ExportChange, type ExportResult, type ObjectError } from '../../../lib/connectors/sdk';
import { PEOPLE } from '../../support/connectorContract';
import { describeWithServer } from '../../support/servers';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from './ldapFixture';

/**
 * What an operator reads when the directory refuses an export: the SDK's code and a sentence naming the DN
 * (and the attribute when the server names one), never the protocol's numbers ("Code: 0x44", "LDAP result 68").
 */
const RAW = /0x[0-9a-f]+|LDAP result|Code:/i;

function errorOf(r: ExportResult): ObjectError {
  if (r.status !== 'error') throw new Error(`expected an error result, got ${JSON.stringify(r)}`);
  return r.error;
}

describeWithServer('slapd')('directory connector: export errors are readable on slapd', () => {
  let slapd: Slapd;
  let f: SlapdFixture;
  let c: LdapConnector;
  beforeAll(async () => {
    slapd = await startSlapd();
  });
  afterAll(async () => {
    await closeParkedSearches();
    await slapd?.stop();
  });
  beforeEach(async () => {
    f = await new SlapdFixture(slapd).init();
    await f.seed(PEOPLE);
    c = f.connector();
  });
  afterEach(async () => {
    await c.close();
    await f.cleanup();
  });

  test('an add of an existing DN is already_exists naming the DN', async () => {
    const dn = f.dns.get('E001')!;
    const e = errorOf(await c.export(f.exportAdd({ key: 'E001', givenName: 'Dup', sn: 'Licate', container: 'Engineering' })));
    expect(e.code).toBe('already_exists');
    expect(e.message).toBe(`An entry with the DN '${dn}' already exists.`);
    expect(e.message).not.toMatch(RAW);
    expect(e.retriable).toBe(false);
  });

  test('an add of an existing DN carries the entry there (`existing`: its entryUUID and the attributes the add named); an update by that anchor takes it over', async () => {
    // Made through the registry, as the engine makes it.
    const made = connectorImplementation('ldap')!.create(f.config() as unknown as Record<string, unknown>);
    if (!hasExport(made)) throw new Error('the ldap connector has no export');
    try {
      const dn = f.dns.get('E002')!;
      const admin = await f.client();
      const uuid = String((await admin.search(dn, { scope: 'base', attributes: ['entryUUID'] })).searchEntries[0].entryUUID);
      // A re-sent add (the engine stopped before it recorded the first answer): the entry is there already.
      const r = await made.export(
        f.exportAdd({ key: 'E002', givenName: 'José', sn: 'Muñoz', mail: 'new@example.test', manager: 'E001', container: 'Engineering' }),
      );
      const e = errorOf(r);
      expect(e.code).toBe('already_exists');
      expect(e.message).toBe(`An entry with the DN '${dn}' already exists.`);
      expect(r.status === 'error' && r.existing).toEqual({
        anchor: uuid,
        dn,
        // What the entry holds of what the add named (departmentNumber it does not have, so it is absent).
        attributes: {
          uid: 'E002',
          employeeNumber: 'E002',
          givenName: 'José',
          sn: 'Muñoz',
          cn: 'José Muñoz',
          mail: 'jose@example.test',
          manager: [f.dns.get('E001')!],
        },
      });
      const taken = await made.export({ kind: 'update', anchor: uuid, objectType: 'User', attributes: { mail: 'new@example.test' } });
      expect(taken).toEqual({ status: 'success', anchor: uuid, dn });
      expect((await admin.search(dn, { scope: 'base', attributes: ['mail'] })).searchEntries[0].mail).toBe('new@example.test');
    } finally {
      await made.close();
    }
  });

  test('an add refused for another reason carries no `existing`', async () => {
    const r = await c.export(f.exportAdd({ key: 'E782', givenName: 'No', sn: 'Where', container: 'Nowhere' }));
    expect(errorOf(r).code).toBe('not_found');
    expect(r.status === 'error' && 'existing' in r).toBe(false);
  });

  test('a move onto an existing DN is already_exists naming both DNs', async () => {
    const [added] = await exportChanges(c, [f.exportAdd({ key: 'E777', givenName: 'Mo', sn: 'Ver', container: 'Sales' })]);
    expect(added.status).toBe('success');
    // uid=E001 in Engineering exists: moving E777 there under the name uid=E001 collides.
    const target = f.dns.get('E001')!;
    const e = errorOf(await c.export({ kind: 'update', anchor: added.anchor!, objectType: 'User', attributes: { dn: target } }));
    expect(e.code).toBe('already_exists');
    expect(e.message).toContain(`uid=E777,ou=Sales,${f.base}`);
    expect(e.message).toContain(`an entry with the DN '${target}' already exists`);
    expect(e.message).not.toMatch(RAW);
  });

  test('an add under a missing container is not_found naming the parent', async () => {
    const e = errorOf(await c.export(f.exportAdd({ key: 'E778', givenName: 'No', sn: 'Where', container: 'Nowhere' })));
    expect(e.code).toBe('not_found');
    expect(e.message).toContain(`uid=E778,ou=Nowhere,${f.base}`);
    expect(e.message).toContain(`'ou=Nowhere,${f.base}' does not exist`);
    expect(e.message).not.toMatch(RAW);
  });

  test('an entry missing a required attribute is constraint_violation naming the DN and the attribute', async () => {
    const change: ExportChange = { kind: 'add', objectType: 'User', attributes: { uid: 'E779', departmentNumber: 'Sales', cn: 'No Surname' } };
    const e = errorOf(await c.export(change));
    expect(e.code).toBe('constraint_violation');
    expect(e.message).toContain(`uid=E779,ou=Sales,${f.base}`);
    expect(e.message).toMatch(/object class rules/);
    expect(e.message).toMatch(/\bsn\b/);
    expect(e.message).not.toMatch(RAW);
  });

  test('a value of the wrong syntax is constraint_violation naming the attribute', async () => {
    const add = f.exportAdd({ key: 'E780', givenName: 'Bad', sn: 'Manager', container: 'Sales' });
    add.attributes.manager = 'not a DN';
    const e = errorOf(await c.export(add));
    expect(e.code).toBe('constraint_violation');
    expect(e.message).toContain(`uid=E780,ou=Sales,${f.base}`);
    expect(e.message).toMatch(/\bmanager\b/);
    expect(e.message).toMatch(/syntax/);
    expect(e.message).not.toMatch(RAW);
  });

  test('an attribute the schema does not know is constraint_violation naming it', async () => {
    const anchors = new Map<string, string>();
    for await (const p of c.fullImport({ pageSize: 100 })) for (const o of p.objects) anchors.set(String(o.attributes.uid), o.anchor);
    const e = errorOf(await c.export({ kind: 'update', anchor: anchors.get('E002')!, objectType: 'User', attributes: { favouriteColour: 'teal' } }));
    expect(e.code).toBe('constraint_violation');
    expect(e.message).toContain(f.dns.get('E002')!);
    expect(e.message).toMatch(/favouriteColour/);
    expect(e.message).not.toMatch(RAW);
  });

  test('an account without write rights gets object_error naming the DN and the missing rights', async () => {
    const admin = await f.client();
    const botDn = `uid=reader,${f.base}`;
    await admin.add(botDn, { objectClass: 'inetOrgPerson', uid: 'reader', cn: 'Reader', sn: 'Bot', userPassword: 'Reader-Pw-31415' });
    const reader = f.connector({ bindDN: botDn, bindPassword: 'Reader-Pw-31415' });
    try {
      const e = errorOf(await reader.export(f.exportAdd({ key: 'E781', givenName: 'No', sn: 'Rights', container: 'Sales' })));
      expect(e.code).toBe('object_error');
      expect(e.message).toContain(`uid=E781,ou=Sales,${f.base}`);
      expect(e.message).toMatch(/insufficient access rights/);
      expect(e.message).toContain(botDn);
      expect(e.message).not.toContain('Reader-Pw-31415');
      expect(e.message).not.toMatch(RAW);
    } finally {
      await reader.close();
    }
  });
});
