import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { openSession } from '../../../lib/connectors/ldap/session';
import { ConnectorError, type ExportChange, type ExportResult } from '../../../lib/connectors/sdk';
import { startDs389, type Ds389 } from '../../support/ds389';
import { describeWithServer } from '../../support/servers';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from './ldapFixture';

/**
 * The directory's adds on slapd: the new entry's anchor read by the add itself (the post-read control, which
 * slapd offers), and a batch whose adds go several at a time on one connection, in OUs that do not exist yet.
 * The same batch on 389 Directory Server, anchored by nsUniqueId. (Active Directory's adds, by objectGUID:
 * test/integration/ldap/adExport.test.ts.)
 */
describeWithServer('slapd')('directory export: adds (slapd)', () => {
  let slapd: Slapd;
  beforeAll(async () => {
    slapd = await startSlapd();
  });
  afterAll(async () => {
    await closeParkedSearches();
    await slapd?.stop();
  });

  const person = (uid: string, dept: string) => ({ objectClass: 'inetOrgPerson', uid, cn: uid, sn: uid, departmentNumber: dept });
  const add = (f: SlapdFixture, uid: string, dept: string): ExportChange => ({
    kind: 'add',
    objectType: 'User',
    dn: `uid=${uid},ou=${dept},${f.base}`,
    attributes: person(uid, dept),
  });
  const entryUuid = async (f: SlapdFixture, dn: string): Promise<string> => {
    const [e] = (await (await f.client()).search(dn, { scope: 'base', attributes: ['entryUUID'] })).searchEntries;
    return String(e.entryUUID);
  };

  test("an add with readBack returns the new entry's attributes as the directory holds them (post-read)", async () => {
    const f = await new SlapdFixture(slapd).init();
    const c = f.config();
    const session = await openSession({ ...c, port: slapd.ldapsPort, security: 'ldaps', timeoutSeconds: 30 });
    try {
      const dn = `uid=ann,ou=Engineering,${f.base}`;
      const read = await session.add(dn, { objectClass: ['inetOrgPerson'], uid: ['ann'], cn: ['Ann'], sn: ['A'] }, ['entryUUID', 'cn']);
      expect(read).toBeDefined();
      expect(read!.dn.toLowerCase()).toBe(dn.toLowerCase());
      expect(read!.entryUUID).toBe(await entryUuid(f, dn));
      expect(read!.cn).toBe('Ann');
      // Without readBack nothing is read.
      expect(await session.add(`uid=bob,ou=Engineering,${f.base}`, { objectClass: ['inetOrgPerson'], uid: ['bob'], cn: ['Bob'], sn: ['B'] })).toBeUndefined();
    } finally {
      await session.close();
    }
  });

  test('a batch of adds into OUs that do not exist yet: every add made once, in order, each with its own anchor; each OU created once', async () => {
    const f = await new SlapdFixture(slapd).init();
    const depts = ['North', 'South', 'East', 'West'];
    const changes = Array.from({ length: 40 }, (_, i) => add(f, `p${i}`, depts[i % depts.length]));
    // A refused add in the middle (its DN is taken) stays that object's error; the adds after it go on.
    changes.splice(20, 0, add(f, 'p3', 'West'));
    const c = f.connector({ createContainers: true });
    let results: ExportResult[];
    try {
      results = await c.exportBatch(changes);
    } finally {
      await c.close();
    }
    expect(results).toHaveLength(41);
    expect(results[20]).toMatchObject({ status: 'error', error: { code: 'already_exists' } });
    const ok = results.filter((r, i) => i !== 20);
    expect(ok.every((r) => r.status === 'success')).toBe(true);
    for (const [i, r] of results.entries()) {
      if (i === 20) continue;
      const dn = changes[i].dn!;
      expect(r).toMatchObject({ status: 'success', dn });
      expect((r as Extract<ExportResult, { status: 'success' }>).anchor).toBe(await entryUuid(f, dn));
    }
    // Each container is created by one add (and named in that add's notes), whatever the order the adds ended in.
    const notes = ok.flatMap((r) => (r.status === 'success' ? (r.notes ?? []) : []));
    expect(notes).toHaveLength(depts.length);
    for (const d of depts) expect(notes.filter((n) => n.startsWith(`Created the container ou=${d},${f.base} for `))).toHaveLength(1);
    const { searchEntries } = await (await f.client()).search(f.base, { scope: 'sub', filter: '(objectClass=inetOrgPerson)', attributes: ['1.1'] });
    expect(searchEntries).toHaveLength(40);
  });

  test('a cancel before the batch starts applies nothing and says so', async () => {
    const f = await new SlapdFixture(slapd).init();
    const c = f.connector();
    const abort = new AbortController();
    abort.abort();
    try {
      const err = await c.exportBatch([add(f, 'x1', 'Engineering'), add(f, 'x2', 'Engineering')], { signal: abort.signal }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectorError);
      expect((err as ConnectorError).code).toBe('aborted');
      expect((err as ConnectorError).applied ?? []).toEqual([]);
    } finally {
      await c.close();
    }
    const { searchEntries } = await (await f.client()).search(f.base, { scope: 'sub', filter: '(objectClass=inetOrgPerson)', attributes: ['1.1'] });
    expect(searchEntries).toHaveLength(0);
  });
});

describeWithServer('ds389')('directory export: adds (389 Directory Server, nsUniqueId)', () => {
  let ds: Ds389;
  beforeAll(async () => {
    ds = await startDs389();
  }, 300_000);
  afterAll(async () => {
    await closeParkedSearches();
    await ds?.stop();
  });

  test('a batch of adds several at a time: each result carries the nsUniqueId the server gave the entry', async () => {
    // The fixture's subtree and people helpers need only the server's address, root account, suffix and CA.
    const f = await new SlapdFixture(ds as unknown as Slapd).init();
    const depts = ['North', 'South'];
    const changes: ExportChange[] = Array.from({ length: 20 }, (_, i) => ({
      kind: 'add',
      objectType: 'User',
      dn: `uid=q${i},ou=${depts[i % 2]},${f.base}`,
      attributes: { objectClass: 'inetOrgPerson', uid: `q${i}`, cn: `q${i}`, sn: `q${i}` },
    }));
    // No anchorAttribute: decided from the root DSE (nsUniqueId on 389 Directory Server).
    const c = f.connector({ createContainers: true });
    let results: ExportResult[];
    try {
      results = await c.exportBatch(changes);
    } finally {
      await c.close();
    }
    const admin = await f.client();
    for (const [i, r] of results.entries()) {
      const [e] = (await admin.search(changes[i].dn!, { scope: 'base', attributes: ['nsUniqueId'] })).searchEntries;
      expect(r).toMatchObject({ status: 'success', dn: changes[i].dn, anchor: String(e.nsUniqueId) });
    }
    expect(results).toHaveLength(20);
    await f.cleanup();
  }, 120_000);
});
