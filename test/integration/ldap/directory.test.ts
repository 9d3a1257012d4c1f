import net from 'node:net';
import { Attribute, Change } from 'ldapts';
import { closeParkedSearches, LdapConnector } from '../../../lib/connectors/ldap';
import {
  ConnectorError,
  exportChanges,
  type ConnectorObject,
  type DeltaChange,
  type ExportChange,
  type ExportResult,
  type ImportPage,
} from '../../../lib/connectors/sdk';
import { describeWithServer } from '../../support/servers';
import { startSlapd, type Slapd } from '../../support/slapd';
import { PEOPLE } from '../../support/connectorContract';
import { rdnValue, SlapdFixture } from './ldapFixture';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
async function fullImport(c: LdapConnector, pageSize = 100, cursor?: string | null): Promise<ImportPage[]> {
  return collect(c.fullImport({ pageSize, cursor }));
}
const objectsOf = (pages: ImportPage[]) => pages.flatMap((p) => p.objects);
const watermarkOf = (pages: ImportPage[]) => pages[pages.length - 1].watermark!;
async function delta(c: LdapConnector, wm: string): Promise<{ changes: DeltaChange[]; next?: string; fullImportRequired?: { reason: string } }> {
  const pages = await collect(c.deltaImport(wm, { pageSize: 100 }));
  return { changes: pages.flatMap((p) => p.changes), next: pages[pages.length - 1].nextWatermark, fullImportRequired: pages[0].fullImportRequired };
}
async function caught(p: Promise<unknown>): Promise<ConnectorError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectorError);
    return err as ConnectorError;
  }
  throw new Error('expected a ConnectorError');
}

describeWithServer('slapd')('directory connector: groups, moves, export, security and failures on slapd', () => {
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

  const groupDn = (name: string) => `cn=${name},ou=groups,${f.base}`;
  async function addGroup(name: string, members: string[]): Promise<void> {
    await (await f.client()).add(groupDn(name), { objectClass: 'groupOfNames', cn: name, member: members.map((k) => f.dns.get(k)!) });
  }
  const byType = (os: ConnectorObject[], t: string) => os.filter((o) => o.objectType === t);

  test('full import reads users and groups: anchor entryUUID, container, member and manager references by DN', async () => {
    await addGroup('eng', ['E001', 'E002']);
    await addGroup(
      'all',
      PEOPLE.map((p) => p.key),
    );
    const objects = objectsOf(await fullImport(c));
    expect(byType(objects, 'User')).toHaveLength(PEOPLE.length);
    const groups = byType(objects, 'Group');
    expect(groups.map((g) => g.attributes.cn).sort()).toEqual(['all', 'eng']);
    const eng = groups.find((g) => g.attributes.cn === 'eng')!;
    expect(eng.references!.member.sort()).toEqual([f.dns.get('E001'), f.dns.get('E002')].sort());
    expect(eng.container).toBe(`ou=groups,${f.base}`);
    expect(eng.attributes.container).toBe(`ou=groups,${f.base}`);
    expect(eng.anchor).toMatch(/^[0-9a-f-]{36}$/);
    expect(eng.dn).toBe(groupDn('eng'));
    const e002 = objects.find((o) => o.attributes.uid === 'E002')!;
    expect(e002.references!.manager).toEqual([f.dns.get('E001')]);
    expect(e002.attributes.userPassword).toBeUndefined();
  });

  test('containers include/exclude and the objectClasses mapping narrow what is read', async () => {
    await addGroup('eng', ['E001']);
    const only = f.connector({ containers: { include: [`ou=Sales,${f.base}`] }, objectClasses: { inetOrgPerson: 'Person' } });
    const sales = objectsOf(await fullImport(only));
    expect(sales.map((o) => o.attributes.uid).sort()).toEqual(['E003', 'E004', 'E005']);
    expect(new Set(sales.map((o) => o.objectType))).toEqual(new Set(['Person']));
    const notSales = f.connector({ containers: { exclude: [`ou=Sales,${f.base}`] } });
    const rest = objectsOf(await fullImport(notSales));
    expect(rest.map((o) => o.attributes.uid ?? o.attributes.cn).sort()).toEqual(['E001', 'E002', 'eng']);
    const few = f.connector({ attributes: ['uid', 'sn'] });
    const [one] = objectsOf(await fullImport(few));
    expect(Object.keys(one.attributes).sort()).toEqual(['container', 'dn', 'entryUUID', 'objectClass', 'sn', 'uid']);
    expect(one.attributes.dn).toBe(one.dn);
    await Promise.all([only.close(), notSales.close(), few.close()]);
  });

  test('a resumed full import with nothing parked (after a crash) re-reads up to the cursor and goes on', async () => {
    const first: ImportPage[] = [];
    for await (const page of c.fullImport({ pageSize: 2 })) {
      first.push(page);
      if (first.length === 1) break;
    }
    await closeParkedSearches(); // the process that held the paged search is gone
    const rest = await fullImport(f.connector(), 2, first[0].cursor);
    const keys = [...objectsOf(first), ...objectsOf(rest)].map((o) => o.attributes.uid).sort();
    expect(keys).toEqual(PEOPLE.map((p) => p.key).sort());
    // The object the cursor points after was deleted meanwhile: the cursor no longer fits.
    const again: ImportPage[] = [];
    for await (const page of f.connector().fullImport({ pageSize: 2 })) {
      again.push(page);
      if (again.length === 1) break;
    }
    await closeParkedSearches();
    const last = again[0].objects[again[0].objects.length - 1];
    await f.remove(String(last.attributes.uid));
    const e = await caught(fullImport(f.connector(), 2, again[0].cursor));
    expect(e.code).toBe('cursor_invalid');
  });

  test.each([
    ['after refint has rewritten the references', true],
    ['right away, while refint may still be rewriting them', false],
  ])('delta %s: group membership changes, a deleted user leaves every group, moves are renames', async (_when, waitForRefint) => {
    await addGroup('eng', ['E001', 'E002', 'E004']);
    await addGroup('sales', ['E004', 'E005']); // changed by refint only
    const fp = await fullImport(c);
    const anchors = new Map(objectsOf(fp).map((o) => [String(o.attributes.uid ?? o.attributes.cn), o.anchor]));
    const admin = await f.client();
    await admin.modify(groupDn('eng'), [new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: [f.dns.get('E003')!] }) })]);
    await f.remove('E004'); // refint drops it from eng; the access log does not show that
    await f.move('E001', 'Sales'); // refint rewrites member
    // refint works in the background: wait until the directory shows its side effects (or not: the delta
    // applies them to what it reads).
    const refintDone = async () => {
      for (let i = 0; i < 200; i++) {
        const r = await admin.search(f.base, { scope: 'sub', filter: `(member=uid=E001,ou=Sales,${f.base})`, attributes: ['1.1'] });
        const gone = await admin.search(f.base, { scope: 'sub', filter: `(member=uid=E004,ou=Sales,${f.base})`, attributes: ['1.1'] });
        if (r.searchEntries.length === 1 && gone.searchEntries.length === 0) return;
        await new Promise((res) => setTimeout(res, 25));
      }
      throw new Error('refint did not rewrite the references within 5 s');
    };
    if (waitForRefint) await refintDone();
    const d = await delta(f.connector(), watermarkOf(fp));
    const kinds = new Map(d.changes.map((ch) => [ch.anchor, ch]));
    expect(kinds.get(anchors.get('E004')!)!.kind).toBe('delete');
    const moved = kinds.get(anchors.get('E001')!)!;
    expect(moved.kind).toBe('rename');
    expect(moved.previousDn).toBe(`uid=E001,ou=Engineering,${f.base}`);
    expect(moved.object!.container).toBe(`ou=Sales,${f.base}`);
    const eng = kinds.get(anchors.get('eng')!)!;
    expect(eng.kind).toBe('update');
    expect(eng.object!.references!.member.map(rdnValue).sort()).toEqual(['E001', 'E002', 'E003']);
    expect(eng.object!.references!.member).toContain(`uid=E001,ou=Sales,${f.base}`);
    expect(d.changes.filter((ch) => ch.anchor === anchors.get('E004'))).toHaveLength(1);
    // Side effects of overlays have no log entry and no new entryCSN: the groups a deleted user was in (its
    // memberOf in the log's copy) and the entries that reference a moved one come all the same.
    const sales = kinds.get(anchors.get('sales')!)!;
    expect(sales.kind).toBe('update');
    expect(sales.object!.references!.member).toEqual([f.dns.get('E005')]);
    const e002 = kinds.get(anchors.get('E002')!)!;
    expect(e002.kind).toBe('update');
    expect(e002.object!.references!.manager).toEqual([`uid=E001,ou=Sales,${f.base}`]);
    // A delta's object looks exactly like the full import's (no bookkeeping attribute such as entryCSN), once
    // refint is done.
    await refintDone();
    const full = new Map(objectsOf(await fullImport(f.connector())).map((o) => [o.anchor, o]));
    for (const ch of d.changes) if (ch.object) expect(ch.object).toEqual(full.get(ch.anchor));
    // Nothing more since: the next delta is empty.
    expect((await delta(f.connector(), d.next!)).changes).toEqual([]);
  });

  test('export: new user into an OU from the DN template, move by container, group membership adds/removes, delete', async () => {
    await addGroup('eng', ['E001']);
    const before = new Map(objectsOf(await fullImport(c)).map((o) => [String(o.attributes.uid ?? o.attributes.cn), o]));
    const added = await c.export(f.exportAdd({ key: 'E500', givenName: 'New', sn: 'Hire', container: 'Sales', manager: 'E001' }));
    expect(added).toMatchObject({ status: 'success', dn: `uid=E500,ou=Sales,${f.base}` });
    const moved = await c.export({
      kind: 'rename',
      anchor: before.get('E002')!.anchor,
      objectType: 'User',
      container: `ou=Sales,${f.base}`,
      attributes: { title: 'Lead' },
    });
    expect(moved).toMatchObject({ status: 'success', dn: `uid=E002,ou=Sales,${f.base}` });
    const grp = await c.export({
      kind: 'update',
      anchor: before.get('eng')!.anchor,
      objectType: 'Group',
      attributes: {},
      multiValueAdds: { member: [`uid=E500,ou=Sales,${f.base}`] },
      multiValueRemoves: { member: [f.dns.get('E001')!] },
    });
    expect(grp.status).toBe('success');
    const del = await c.export({ kind: 'delete', anchor: before.get('E005')!.anchor, objectType: 'User', attributes: {} });
    expect(del.status).toBe('success');
    const after = new Map(objectsOf(await fullImport(f.connector())).map((o) => [String(o.attributes.uid ?? o.attributes.cn), o]));
    expect(after.get('E500')!.anchor).toBe(added.anchor);
    expect(after.get('E500')!.references!.manager).toEqual([f.dns.get('E001')]);
    expect(after.get('E002')!.anchor).toBe(before.get('E002')!.anchor);
    expect(after.get('E002')!.container).toBe(`ou=Sales,${f.base}`);
    expect(after.get('E002')!.attributes.title).toBe('Lead');
    expect(after.get('eng')!.references!.member).toEqual([`uid=E500,ou=Sales,${f.base}`]);
    expect(after.has('E005')).toBe(false);
  });

  test('deltaStrategy timestamp: adds and modifies by modifyTimestamp; deletes only through the anchor set, every 10th delta', async () => {
    // modifyTimestamp has whole seconds and the watermark an overlap of one: let the seed's seconds pass.
    await new Promise((r) => setTimeout(r, 2100));
    const t = f.connector({ deltaStrategy: 'timestamp' });
    try {
      const fp = await fullImport(t);
      expect(JSON.parse(watermarkOf(fp))).toMatchObject({ s: 'timestamp', n: 0 });
      const anchors = new Map(objectsOf(fp).map((o) => [String(o.attributes.uid), o.anchor]));
      await f.update('E002', { mail: 'jose.new@example.test' });
      await f.seed([{ key: 'E600', givenName: 'New', sn: 'Person', container: 'Sales' }]);
      await f.remove('E005');
      const d = await delta(t, watermarkOf(fp));
      const byUid = new Map(d.changes.map((ch) => [String(ch.object?.attributes.uid ?? ''), ch]));
      expect(byUid.get('E002')).toMatchObject({ kind: 'update', anchor: anchors.get('E002'), object: { attributes: { mail: 'jose.new@example.test' } } });
      expect(byUid.get('E600')?.kind).toBe('add');
      // A delete leaves no modifyTimestamp behind.
      expect(d.changes.some((ch) => ch.anchor === anchors.get('E005'))).toBe(false);
      // The same changes are not reported twice (seen inside the overlap second).
      let w = d.next!;
      const again = await delta(t, w);
      expect(again.changes).toEqual([]);
      w = again.next!;
      for (let i = 3; i <= 9; i++) w = (await delta(t, w)).next!;
      expect(JSON.parse(w)).toMatchObject({ n: 9 });
      // The 10th asks for a full import, whose anchor set is where the delete shows (the engine marks it).
      const tenth = await delta(t, w);
      expect(tenth.fullImportRequired?.reason).toMatch(/cannot see deletes/);
      const full = objectsOf(await fullImport(t)).map((o) => o.anchor);
      expect(full).toContain(anchors.get('E002'));
      expect(full).not.toContain(anchors.get('E005'));
    } finally {
      await t.close();
    }
  });

  test('export of a whole multi-valued value (as the engine sends it) writes only the values that went and came', async () => {
    await addGroup('ops', ['E001', 'E002', 'E004']);
    const anchors = new Map(objectsOf(await fullImport(c)).map((o) => [String(o.attributes.uid ?? o.attributes.cn), o.anchor]));
    const wanted = ['E002', 'E003', 'E005'].map((k) => f.dns.get(k)!);
    const r = await c.export({ kind: 'update', anchor: anchors.get('ops')!, objectType: 'Group', attributes: { member: wanted, description: 'Ops' } });
    expect(r.status).toBe('success');
    // The access log's copy of the modify: single-value deletes and adds of member, a replace only of description.
    const admin = await f.client();
    const { searchEntries } = await admin.search('cn=accesslog', {
      scope: 'one',
      filter: `(&(reqType=modify)(reqDN=${groupDn('ops')}))`,
      attributes: ['reqMod'],
    });
    const mods = searchEntries.flatMap((e) => (Array.isArray(e.reqMod) ? e.reqMod : [e.reqMod])).map(String);
    expect(mods.filter((m) => /^member:/i.test(m)).sort()).toEqual(
      [`member:- ${f.dns.get('E001')}`, `member:- ${f.dns.get('E004')}`, `member:+ ${f.dns.get('E003')}`, `member:+ ${f.dns.get('E005')}`].sort(),
    );
    expect(mods).toContain('description:= Ops');
    const after = objectsOf(await fullImport(f.connector())).find((o) => o.attributes.cn === 'ops')!;
    expect([...after.references!.member].sort()).toEqual([...wanted].sort());
    // The same whole value again writes nothing.
    const again = await c.export({ kind: 'update', anchor: anchors.get('ops')!, objectType: 'Group', attributes: { member: wanted } });
    expect(again.status).toBe('success');
    const count = (await admin.search('cn=accesslog', { scope: 'one', filter: `(&(reqType=modify)(reqDN=${groupDn('ops')}))`, attributes: ['1.1'] }))
      .searchEntries.length;
    expect(count).toBe(searchEntries.length);
  });

  test('export moves: the DN template computes another container, a container attribute, an unrelated change stays put', async () => {
    const added = await c.export(f.exportAdd({ key: 'E510', givenName: 'Move', sn: 'Me', container: 'Sales' }));
    expect(added).toMatchObject({ status: 'success', dn: `uid=E510,ou=Sales,${f.base}` });
    const byTemplate = await c.export({
      kind: 'update',
      anchor: added.anchor!,
      objectType: 'User',
      attributes: { departmentNumber: 'Engineering', title: 'Moved' },
    });
    expect(byTemplate).toMatchObject({ status: 'success', dn: `uid=E510,ou=Engineering,${f.base}` });
    const unrelated = await c.export({ kind: 'update', anchor: added.anchor!, objectType: 'User', attributes: { mail: 'e510@example.test' } });
    expect(unrelated).toMatchObject({ status: 'success', dn: `uid=E510,ou=Engineering,${f.base}` });
    // E001 was not placed by the template (no departmentNumber): a mail change does not move it.
    const anchors = new Map(objectsOf(await fullImport(c)).map((o) => [String(o.attributes.uid ?? o.attributes.cn), o.anchor]));
    const e001 = await c.export({ kind: 'update', anchor: anchors.get('E001')!, objectType: 'User', attributes: { mail: 'ada2@example.test' } });
    expect(e001).toMatchObject({ status: 'success', dn: f.dns.get('E001') });
    const byContainer = await c.export({ kind: 'update', anchor: anchors.get('E001')!, objectType: 'User', attributes: { container: `ou=Sales,${f.base}` } });
    expect(byContainer).toMatchObject({ status: 'success', dn: `uid=E001,ou=Sales,${f.base}` });
    const after = new Map(objectsOf(await fullImport(c)).map((o) => [String(o.attributes.uid ?? o.attributes.cn), o]));
    expect(after.get('E510')).toMatchObject({
      anchor: added.anchor,
      container: `ou=Engineering,${f.base}`,
      attributes: { title: 'Moved', mail: 'e510@example.test', departmentNumber: 'Engineering' },
    });
    expect(after.get('E001')).toMatchObject({ anchor: anchors.get('E001'), container: `ou=Sales,${f.base}`, attributes: { mail: 'ada2@example.test' } });
  });

  test('export per-object errors: an existing DN, a constraint violation, a missing object; the rest goes on', async () => {
    const results = await exportChanges(c, [
      f.exportAdd({ key: 'E001', givenName: 'Dup', sn: 'Licate', container: 'Engineering' }),
      { kind: 'add', objectType: 'User', attributes: { uid: 'E600', departmentNumber: 'Sales', givenName: 'No', cn: 'No Surname' } },
      { kind: 'update', anchor: '00000000-0000-0000-0000-000000000000', objectType: 'User', attributes: { mail: 'x@example.test' } },
      f.exportAdd({ key: 'E601', givenName: 'Fine', sn: 'Person', container: 'Sales' }),
    ]);
    expect(results.map((r) => (r.status === 'error' ? r.error.code : 'success'))).toEqual(['already_exists', 'constraint_violation', 'not_found', 'success']);
    for (const r of results) if (r.status === 'error') expect(r.error.message.length).toBeGreaterThan(10);
  });

  test('ldaps with a wrong CA and a wrong password fail with clear errors and no secret', async () => {
    const otherSlapd = await startSlapd(); // another self-signed certificate
    const other = otherSlapd.caCertificate;
    await otherSlapd.stop();
    const wrongCa = f.connector({ caCertificate: other });
    const e1 = await caught(wrongCa.testConnection());
    expect(e1.code).toBe('connection_failed');
    expect(e1.retriable).toBe(false);
    expect(e1.message).toMatch(/certificate is not trusted/);
    const badPw = f.connector({ bindPassword: 'wrong-password-Zx9' });
    const e2 = await caught(badPw.testConnection());
    expect(e2.code).toBe('authentication_failed');
    expect(e2.message).not.toContain('wrong-password-Zx9');
    expect(e2.message).toMatch(/invalid credentials/);
    expect(() => f.connector({ security: 'none' })).toThrow(/allowInsecure/);
  });

  test('StartTLS on the plain port with the CA certificate: bind, import and export; a wrong CA is refused before the bind', async () => {
    const tls = f.connector({ security: 'starttls', port: slapd.port, host: 'localhost' });
    expect((await tls.testConnection()).message).toMatch(/starttls/);
    const objects = objectsOf(await fullImport(tls));
    expect(
      byType(objects, 'User')
        .map((o) => o.attributes.uid)
        .sort(),
    ).toEqual(PEOPLE.map((p) => p.key).sort());
    const added = await tls.export(f.exportAdd({ key: 'E700', givenName: 'Over', sn: 'StartTLS', container: 'Sales' }));
    expect(added).toMatchObject({ status: 'success', dn: `uid=E700,ou=Sales,${f.base}` });
    await tls.close();
    const byIp = f.connector({ security: 'starttls', port: slapd.port, host: '127.0.0.1' });
    expect((await byIp.testConnection()).message).toMatch(/127\.0\.0\.1/);
    await byIp.close();
    // security none (opted in) is plain LDAP on the same port: no TLS is attempted.
    const plain = f.connector({ security: 'none', allowInsecure: true, port: slapd.port });
    expect((await plain.testConnection()).message).toMatch(/\(none\)/);
    await plain.close();
    const other = await startSlapd();
    try {
      const wrongCa = f.connector({ security: 'starttls', port: slapd.port, caCertificate: other.caCertificate });
      const e = await caught(wrongCa.testConnection());
      expect(e.code).toBe('connection_failed');
      expect(e.message).toMatch(/certificate is not trusted/);
      expect(e.message).not.toContain(slapd.rootPassword);
    } finally {
      await other.stop();
    }
  });
});

describeWithServer('slapd')('directory connector: server loss and trimmed change log', () => {
  test('the server stopped in the middle of an import and of an export: ConnectorError connection_failed', async () => {
    const slapd = await startSlapd();
    try {
      const f = await new SlapdFixture(slapd).init();
      await f.seed(PEOPLE);
      const c = f.connector({ pageSize: 2 }); // directory pages of 2: the next one is read from the server
      await c.testConnection(); // c's own session is open and bound
      const it = c.fullImport({ pageSize: 2 })[Symbol.asyncIterator]();
      const first = await it.next();
      expect(first.value.objects).toHaveLength(2);
      await (await f.client()).unbind().catch(() => undefined);
      await slapd.halt();
      const e = await caught(it.next());
      expect(e.code).toBe('connection_failed');
      expect(e.retriable).toBe(true);
      const x = await caught(c.export(f.exportAdd({ key: 'E9', givenName: 'A', sn: 'B' })));
      expect(['connection_failed', 'timeout']).toContain(x.code);
      // The server back: the old session does not go on unbound (ldapts would reconnect anonymously, and an
      // anonymous search sees nothing); a new connector instance binds again.
      await slapd.restart();
      const y = await caught(c.export(f.exportUpdate(first.value.objects[0].anchor, 'E001', { mail: 'x@example.test' })));
      expect(y.code).toBe('connection_failed');
      await c.close();
      const again = f.connector();
      expect(await again.export(f.exportUpdate(first.value.objects[0].anchor, 'E001', { mail: 'x@example.test' }))).toMatchObject({ status: 'success' });
      await again.close();
    } finally {
      await closeParkedSearches();
      await slapd.stop();
    }
  });

  test('the server lost in the middle of an export batch: the error carries the results applied before it', async () => {
    const slapd = await startSlapd();
    try {
      const f = await new SlapdFixture(slapd).init();
      const c = f.connector();
      // The server goes away right after the second change is applied. The changes go one at a time here (the
      // connector's exportBatch, which sends consecutive adds several at once, is taken away), so "right after
      // the second" is one moment.
      (c as { exportBatch?: unknown }).exportBatch = undefined;
      let applied = 0;
      const exportOne = c.export.bind(c);
      c.export = async (ch: ExportChange): Promise<ExportResult> => {
        const r = await exportOne(ch);
        if (++applied === 2) await slapd.halt();
        return r;
      };
      const batch = ['E701', 'E702', 'E703', 'E704'].map((key) => f.exportAdd({ key, givenName: 'Batch', sn: key, container: 'Sales' }));
      const e = await caught(exportChanges(c, batch));
      expect(['connection_failed', 'timeout']).toContain(e.code);
      expect(e.applied).toHaveLength(2);
      expect(e.applied!.map((r) => r.status === 'success' && r.dn)).toEqual([`uid=E701,ou=Sales,${f.base}`, `uid=E702,ou=Sales,${f.base}`]);
      await c.close();
      // What the error says was applied is what the directory has.
      await slapd.restart();
      const now = objectsOf(await fullImport(f.connector())).map((o) => String(o.attributes.uid));
      expect(now.filter((k) => k.startsWith('E70')).sort()).toEqual(['E701', 'E702']);
      expect(e.applied!.map((r) => r.anchor).sort()).toEqual(
        objectsOf(await fullImport(f.connector()))
          .filter((o) => String(o.attributes.uid).startsWith('E70'))
          .map((o) => o.anchor)
          .sort(),
      );
    } finally {
      await closeParkedSearches();
      await slapd.stop();
    }
  });

  test('the access log purged past the watermark: the delta asks for a full import, with a reason', async () => {
    const slapd = await startSlapd();
    try {
      const f = await new SlapdFixture(slapd).init();
      await f.seed(PEOPLE);
      const c = f.connector();
      const wm = watermarkOf(await fullImport(c));
      await f.update('E002', { sn: 'Changed' });
      // Trim the log: delete every entry (the purge task does the same to old ones).
      const admin = await f.client();
      const log = await admin.search('cn=accesslog', { scope: 'one', filter: '(objectClass=*)', attributes: ['1.1'] });
      for (const e of log.searchEntries) await admin.del(e.dn);
      const d = await delta(c, wm);
      expect(d.changes).toEqual([]);
      expect(d.fullImportRequired?.reason).toMatch(/no longer reaches back/);
      // A watermark of another strategy is refused the same way.
      const d2 = await delta(c, JSON.stringify({ s: 'usn', u: 1, ds: 'x', t: null }));
      expect(d2.fullImportRequired?.reason).toMatch(/usn/);
      await c.close();
      await f.cleanup();
    } finally {
      await slapd.stop();
    }
  });

  test('another server (a restored or rebuilt directory with the same names): the delta asks for a full import', async () => {
    const [one, two] = [await startSlapd(), await startSlapd()];
    try {
      const f = await new SlapdFixture(one).init();
      await f.seed(PEOPLE);
      const c = f.connector();
      const wm = watermarkOf(await fullImport(c));
      await c.close();
      // The same configuration pointed at the other server (same suffix, another naming-context entryUUID).
      const other = new LdapConnector('ldap', { ...f.config(), port: two.ldapsPort, caCertificate: two.caCertificate });
      const d = await delta(other, wm);
      expect(d.changes).toEqual([]);
      expect(d.fullImportRequired?.reason).toMatch(/not the one the watermark was taken on/);
      await other.close();
    } finally {
      await closeParkedSearches();
      await one.stop();
      await two.stop();
    }
  });

  test('timeoutSeconds bounds a server that accepts the connection and never answers', async () => {
    const silent = net.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const c = new LdapConnector('ldap', {
        host: '127.0.0.1',
        port,
        baseDN: 'dc=example,dc=com',
        bindDN: 'cn=admin,dc=example,dc=com',
        bindPassword: 'secret-pw',
        security: 'none',
        allowInsecure: true,
        timeoutSeconds: 1,
      });
      const started = Date.now();
      const e = await caught(c.testConnection());
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(e.code).toBe('timeout');
      expect(e.retriable).toBe(true);
      expect(e.message).not.toContain('secret-pw');
      await c.close();
    } finally {
      silent.close();
    }
  });
});
