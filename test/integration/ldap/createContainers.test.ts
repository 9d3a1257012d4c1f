import { closeParkedSearches } from '../../../lib/connectors/ldap';
import type { ExportResult } from '../../../lib/connectors/sdk';
import { describeWithServer } from '../../support/servers';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from './ldapFixture';

/**
 * createContainers on slapd: an add or a move into OUs that do not exist yet creates them from the top down and
 * says so in the result's notes; without the setting the object's error names the topmost missing parent and
 * nothing is created. (The same against Active Directory: test/integration/ldap/adDelta.test.ts.)
 */
describeWithServer('slapd')('directory export: createContainers (slapd)', () => {
  let slapd: Slapd;
  beforeAll(async () => {
    slapd = await startSlapd();
  });
  afterAll(async () => {
    await closeParkedSearches();
    await slapd?.stop();
  });

  const exists = async (f: SlapdFixture, dn: string) => {
    const c = await f.client();
    try {
      return (await c.search(dn, { scope: 'base', attributes: ['1.1'] })).searchEntries.length === 1;
    } catch {
      return false;
    }
  };
  const person = (uid: string, dept: string) => ({ objectClass: 'inetOrgPerson', uid, cn: uid, sn: uid, departmentNumber: dept });

  test('without createContainers the add fails naming the topmost missing parent, and nothing is created', async () => {
    const f = await new SlapdFixture(slapd).init();
    const dn = `uid=ann,ou=Team,ou=Research,${f.base}`;
    const c = f.connector();
    try {
      const r = await c.export({ kind: 'add', objectType: 'User', dn, attributes: person('ann', 'Research') });
      expect(r).toMatchObject({
        status: 'error',
        error: {
          code: 'not_found',
          message: expect.stringContaining(`Placing '${dn}': its parent 'ou=Research,${f.base}' does not exist (set createContainers`),
        },
      });
      expect(await exists(f, `ou=Research,${f.base}`)).toBe(false);
    } finally {
      await c.close();
    }
  });

  test('with createContainers an add creates the missing OUs in order and lists them; a move into new OUs too', async () => {
    const f = await new SlapdFixture(slapd).init();
    const dn = `uid=bob,ou=Team,ou=Research,${f.base}`;
    const c = f.connector({ createContainers: true });
    try {
      const r = (await c.export({ kind: 'add', objectType: 'User', dn, attributes: person('bob', 'Research') })) as Extract<
        ExportResult,
        { status: 'success' }
      >;
      expect(r).toMatchObject({ status: 'success', dn });
      expect(r.notes).toEqual([
        `Created the container ou=Research,${f.base} for ${dn} (createContainers).`,
        `Created the container ou=Team,ou=Research,${f.base} for ${dn} (createContainers).`,
      ]);
      expect(await exists(f, dn)).toBe(true);
      // An add whose parents exist says nothing.
      const r2 = (await c.export({
        kind: 'add',
        objectType: 'User',
        dn: `uid=cy,ou=Team,ou=Research,${f.base}`,
        attributes: person('cy', 'Research'),
      })) as Extract<ExportResult, { status: 'success' }>;
      expect(r2.notes).toBeUndefined();
      // A move into an OU that does not exist.
      const to = `ou=Labs,ou=Sales,${f.base}`;
      const m = (await c.export({ kind: 'update', objectType: 'User', anchor: r.anchor, container: to, attributes: {} })) as Extract<
        ExportResult,
        { status: 'success' }
      >;
      expect(m).toMatchObject({ status: 'success', dn: `uid=bob,${to}` });
      expect(m.notes).toEqual([`Created the container ${to} for uid=bob,${to} (createContainers).`]);
      expect(await exists(f, `uid=bob,${to}`)).toBe(true);
      // A missing parent that is not an OU is not created.
      const bad = `uid=dee,cn=Project,${f.base}`;
      const e = await c.export({ kind: 'add', objectType: 'User', dn: bad, attributes: person('dee', 'x') });
      expect(e).toMatchObject({
        status: 'error',
        error: {
          message: expect.stringContaining(
            `Placing '${bad}': its parent 'cn=Project,${f.base}' does not exist, and createContainers creates only OU= containers.`,
          ),
        },
      });
    } finally {
      await c.close();
    }
  });
});
