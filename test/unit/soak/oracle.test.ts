import { planDays } from '../../support/soak/harness';
import { HrModel, hrCsv, type HrRow } from '../../support/soak/model';
import { compareLdap, compareStaff, dnEqual, expectedDn, expectedState, parseDn, type ActualEntry, type StaffRow } from '../../support/soak/oracle';

/**
 * The soak's oracle is the judge of the export engine: a false difference is a harness bug. These check that
 * it holds DNs equal as LDAP does, and that it finds each kind of difference it reports.
 */

const row = (over: Partial<HrRow> = {}): HrRow => ({
  employeeId: 'E00001',
  givenName: 'Zoë',
  sn: "O'Brien, Jr.",
  mail: 'zoe.obrienjr.e00001@example.com',
  department: 'Sales, EMEA',
  title: 'Counsel, Contracts',
  manager: '',
  ...over,
});

describe('DN equality', () => {
  test.each([
    ['uid=E1,ou=Sales\\, EMEA,ou=people,dc=example,dc=com', 'uid=E1,ou=Sales\\2C EMEA,ou=people,dc=example,dc=com'],
    ['UID=E1,OU=Sales\\2c EMEA,ou=people,dc=example,dc=com', 'uid=e1,ou=sales\\, emea,ou=People,DC=example,DC=com'],
    ['uid=E1, ou=Legal \\+ Compliance, ou=people,dc=example,dc=com', 'uid=E1,ou=Legal \\2B Compliance,ou=people,dc=example,dc=com'],
    ['uid=E1,ou=Développement,ou=people,dc=example,dc=com', 'uid=E1,ou=D\\C3\\A9veloppement,ou=people,dc=example,dc=com'],
    ['uid=E1,ou="Sales, EMEA",ou=people,dc=example,dc=com', 'uid=E1,ou=Sales\\, EMEA,ou=people,dc=example,dc=com'],
    ['cn=a+uid=b,dc=example,dc=com', 'uid=b+cn=a,dc=example,dc=com'],
  ])('%s equals %s', (a, b) => expect(dnEqual(a, b)).toBe(true));

  test.each([
    ['uid=E1,ou=Sales\\, EMEA,ou=people,dc=example,dc=com', 'uid=E1,ou=Sales,ou=EMEA,ou=people,dc=example,dc=com'],
    ['uid=E1,ou=Engineering,ou=people,dc=example,dc=com', 'uid=E1,ou=Research,ou=people,dc=example,dc=com'],
    ['uid=E1,ou=Développement,ou=people,dc=example,dc=com', 'uid=E1,ou=Developpement,ou=people,dc=example,dc=com'],
  ])('%s differs from %s', (a, b) => expect(dnEqual(a, b)).toBe(false));

  test('the expected DN escapes what RFC 4514 requires and parses back to the department', () => {
    for (const department of ['Sales, EMEA', 'Legal + Compliance', 'Développement', ' lead', 'trail ', '#hash', 'a\\b', 'x=y;z"<>']) {
      const dn = expectedDn({ employeeId: 'E1', department });
      expect(parseDn(dn)[1]).toEqual([['ou', department]]);
    }
  });
});

describe('the oracle and the comparison', () => {
  const manager = row({ employeeId: 'E00002', department: 'Développement', sn: 'Muñoz' });
  const report = row({ manager: 'E00002' });
  const forward = row({ employeeId: 'E00003', manager: 'E09999' });
  const refused = row({ employeeId: 'E00004', mail: 'x.example.com' });
  const expected = expectedState([manager, report, forward, refused]);

  const entryOf = (id: string): ActualEntry => {
    const e = expected.ldap.get(id)!;
    return {
      dn: e.dn,
      attributes: Object.fromEntries(
        Object.entries(e.attributes)
          .filter(([, v]) => v.length)
          .map(([k, v]) => [k.toLowerCase(), v]),
      ),
    };
  };
  const staffRows = (): StaffRow[] => [...expected.staff.values()].map((r) => ({ ...r }));

  test('a manager in the file is the manager DN and the manager id; one not in the file is no value', () => {
    expect(expected.ldap.get('E00001')!.attributes.manager).toEqual([expectedDn(manager)]);
    expect(expected.ldap.get('E00003')!.attributes.manager).toEqual([]);
    expect(expected.staff.get('E00001')!.manager_id).toBe('E00002');
    expect(expected.staff.get('E00003')!.manager_id).toBeNull();
  });

  test('a row the staff table refuses is expected absent there, present in the directory', () => {
    expect(expected.staffRefused).toEqual(['E00004']);
    expect(expected.staff.has('E00004')).toBe(false);
    expect(expected.ldap.has('E00004')).toBe(true);
  });

  test('the targets as expected: no difference, whatever the DN spelling and attribute type case', () => {
    const entries = ['E00001', 'E00002', 'E00003', 'E00004'].map(entryOf);
    // The directory writes the manager DN in its own form.
    entries[0].attributes.manager = ['UID=E00002,OU=D\\C3\\A9veloppement,OU=people,DC=example,DC=com'];
    entries[0].dn = 'uid=E00001,ou=Sales\\2C EMEA,ou=people,dc=example,dc=com';
    expect(compareLdap(expected.ldap, entries)).toEqual([]);
    expect(compareStaff(expected.staff, staffRows())).toEqual([]);
  });

  test('each kind of difference is found', () => {
    const entries = ['E00001', 'E00002', 'E00003'].map(entryOf);
    entries[0].attributes.manager = ['uid=E00002,ou=Engineering,ou=people,dc=example,dc=com'];
    entries[1].dn = 'uid=E00002,ou=Engineering,ou=people,dc=example,dc=com';
    entries.push({ ...entryOf('E00003'), dn: 'uid=E00003,ou=Finance,ou=people,dc=example,dc=com' });
    entries.push({ dn: 'uid=E07777,ou=Finance,ou=people,dc=example,dc=com', attributes: { uid: ['E07777'], employeenumber: ['E07777'] } });
    expect(compareLdap(expected.ldap, entries).map((d) => [d.kind, d.employeeId, d.attribute])).toEqual([
      ['wrong-value', 'E00001', 'manager'],
      ['wrong-dn', 'E00002', undefined],
      ['duplicate', 'E00003', undefined],
      ['extra', 'E07777', undefined],
      ['missing', 'E00004', undefined],
    ]);
    const rows = staffRows().filter((r) => r.employee_id !== 'E00003');
    rows[0].surname = null;
    rows.push({ employee_id: 'E00004', given_name: 'x', surname: 'y', mail: 'x.example.com', department: 'Finance', manager_id: null });
    expect(compareStaff(expected.staff, rows).map((d) => [d.kind, d.employeeId, d.attribute])).toEqual([
      ['wrong-value', 'E00002', 'surname'],
      ['extra', 'E00004', undefined],
      ['missing', 'E00003', undefined],
    ]);
  });
});

describe('the HR model', () => {
  test('the same seed gives the same days; managers are named before their hire; leavers come back with their id', () => {
    const days = (seed: number) => {
      const m = new HrModel(seed, 60);
      const out = [m.day0()];
      for (let d = 1; d < 6; d++) out.push(m.nextDay({ refuseAnAdd: d === 1 }));
      return out;
    };
    const a = days(7);
    expect(days(7)).toEqual(a);
    expect(days(8)).not.toEqual(a);
    const ids = a.map((d) => new Set(d.rows.map((r) => r.employeeId)));
    // A forward reference: a manager id not in the file that day, in the file a later day.
    expect(a.some((d, i) => d.rows.some((r) => r.manager && !ids[i].has(r.manager) && ids.slice(i + 1).some((s) => s.has(r.manager))))).toBe(true);
    // A rehire: an id in the file, gone, and back.
    expect([...ids[0]].some((id) => ids.some((s, i) => i > 0 && !s.has(id) && ids.slice(i + 1).some((t) => t.has(id))))).toBe(true);
    expect(a[1].refused).toHaveLength(1);
    expect(a[2].fixed).toEqual(a[1].refused);
    expect(a[2].rows.find((r) => r.employeeId === a[1].refused[0])!.mail).toContain('@');
  });

  test('the HR file quotes values with commas and quotes', () => {
    expect(hrCsv([row({ title: 'Say "hi"' })]).split('\n')[1]).toBe('E00001,Zoë,"O\'Brien, Jr.",zoe.obrienjr.e00001@example.com,"Sales, EMEA","Say ""hi""",');
  });
});

describe('the day plans', () => {
  test.each([1, 7, 20261129, 424242])('seed %i: every mode within three days, both HR imports, a refused add on day 1, a kill on a sequential day', (seed) => {
    const plans = planDays(seed, 4);
    expect(new Set(plans.slice(0, 3).map((p) => p.mode))).toEqual(new Set(['sequential', 'schedule', 'plan']));
    expect([plans[0].hrImport, plans[2].hrImport]).toEqual(['FullImport', 'DeltaImport']);
    expect(plans[1].refuseAnAdd).toBe(true);
    expect(plans.filter((p) => p.kill).length).toBeGreaterThan(0);
    expect(plans.filter((p) => p.kill).every((p) => p.mode === 'sequential')).toBe(true);
    expect(planDays(seed, 4)).toEqual(plans);
  });
});
