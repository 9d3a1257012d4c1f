import { randomBytes } from 'node:crypto';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { Attribute, Change } from '../../../lib/connectors/ldap/session';
import { canonicalizeRule } from '../../../lib/api/ruleAttributes';
import { directoryAttributeNames } from '../../../lib/connectors/ldap';
import { LdapConnector } from '../../../lib/connectors/ldap/ldapConnector';
import { openSession, type DirectorySession } from '../../../lib/connectors/ldap/session';
import type { DeltaChange, ExportResult } from '../../../lib/connectors/sdk';
import { describeWithServer } from '../../support/servers';
import { iterateCsObjects } from '../../../lib/sync/space/connectorSpace';
import { startService } from '../../support/service';
import { rule, runImport } from '../sync/syncSupport';
import { idsOf, meshOf, targets } from './e2eSupport';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';

/**
 * USN deltas against a real Active Directory DC (Samba): AD keeps member and manager itself, so the groups and
 * reports naming a moved or renamed entry show its new DN without their own uSNChanged moving; an entry moved
 * out of the connector's containers is a delete; a delete names the DN the entry had. And the connection test
 * of a bind account that cannot list deleted objects.
 */
describeWithServer('samba')('Active Directory USN delta: linked values, moves out of scope, rights', () => {
  let dc: SambaAd;
  let admin: DirectorySession;
  const run = randomBytes(4).toString('hex');
  const top = () => `OU=d${run},${dc.baseDN}`;
  const out = () => `OU=out${run},${dc.baseDN}`;

  beforeAll(async () => {
    dc = await startSambaAd();
    admin = await openSession({
      host: 'localhost',
      port: dc.ldapsPort,
      bindDN: dc.adminDN,
      bindPassword: dc.adminPassword,
      security: 'ldaps',
      caCertificate: dc.caCertificate,
      timeoutSeconds: 30,
    });
    for (const dn of [top(), `OU=A,${top()}`, `OU=B,${top()}`, out()]) await admin.add(dn, { objectClass: ['organizationalUnit'] });
  }, SAMBA_START_TIMEOUT_MS);
  afterAll(async () => {
    await closeParkedSearches();
    await admin?.close();
    await dc?.release();
  });

  const connector = (over: Record<string, unknown> = {}) =>
    new LdapConnector('active_directory', {
      host: 'localhost',
      port: dc.ldapsPort,
      security: 'ldaps',
      caCertificate: dc.caCertificate,
      bindDN: dc.adminDN,
      bindPassword: dc.adminPassword,
      baseDN: top(),
      attributes: ['cn', 'sAMAccountName', 'member', 'manager', 'objectGUID', 'objectClass'],
      deltaStrategy: 'usn',
      ...over,
    });
  const user = (dn: string, extra: Record<string, string[]> = {}) =>
    admin.add(dn, { objectClass: ['user'], sAMAccountName: [`${/^CN=([^,]+)/.exec(dn)![1]}`.slice(0, 20)], ...extra });

  async function baseline(c: LdapConnector): Promise<string> {
    let w: string | null | undefined;
    for await (const p of c.fullImport({ pageSize: 1000 })) if (p.watermark !== undefined) w = p.watermark;
    expect(w).toBeTruthy();
    return w!;
  }
  async function delta(c: LdapConnector, w: string): Promise<DeltaChange[]> {
    const changes: DeltaChange[] = [];
    for await (const p of c.deltaImport(w, { pageSize: 1000 })) {
      expect(p.fullImportRequired).toBeUndefined();
      expect(p.errors).toEqual([]);
      changes.push(...p.changes);
    }
    return changes;
  }
  const byCn = (changes: DeltaChange[], cn: string) => changes.filter((c) => c.object?.attributes.cn === cn || (c.previousDn ?? '').startsWith(`CN=${cn},`));

  test('the group of a moved and a renamed member, the reports of a moved manager, a delete by its former DN, a move out of the containers', async () => {
    const A = `OU=A,${top()}`;
    const B = `OU=B,${top()}`;
    const p = `u${run}`;
    await user(`CN=${p}mov,${A}`);
    await user(`CN=${p}ren,${A}`);
    await user(`CN=${p}del,${A}`);
    await user(`CN=${p}boss,${A}`);
    await user(`CN=${p}rep1,${A}`, { manager: [`CN=${p}boss,${A}`] });
    await user(`CN=${p}rep2,${B}`, { manager: [`CN=${p}boss,${A}`] });
    await user(`CN=${p}gone,${A}`);
    await admin.add(`CN=${p}grp,${B}`, {
      objectClass: ['group'],
      sAMAccountName: [`${p}grp`],
      member: [`CN=${p}mov,${A}`, `CN=${p}ren,${A}`, `CN=${p}del,${A}`, `CN=${p}gone,${A}`],
    });
    const c = connector();
    try {
      const w = await baseline(c);
      await admin.modifyDN(`CN=${p}mov,${A}`, `CN=${p}mov,${B}`);
      await admin.modifyDN(`CN=${p}ren,${A}`, `CN=${p}renamed,${A}`);
      await admin.modifyDN(`CN=${p}boss,${A}`, `CN=${p}boss,${B}`);
      await admin.modifyDN(`CN=${p}gone,${A}`, `CN=${p}gone,${out()}`);
      await admin.del(`CN=${p}del,${A}`);
      const changes = await delta(c, w);

      const [grp] = byCn(changes, `${p}grp`);
      expect(grp).toMatchObject({ kind: 'update' });
      // As AD shows the group now: the moved and renamed members' new DNs, the deleted one gone; the member moved
      // out of the containers stays a member in AD (an attribute value, no longer a reference of this connector).
      expect((grp.object!.attributes.member as string[]).map((x) => x.toLowerCase()).sort()).toEqual(
        [`CN=${p}mov,${B}`, `CN=${p}renamed,${A}`, `CN=${p}gone,${out()}`].map((x) => x.toLowerCase()).sort(),
      );
      expect(grp.object!.references!.member.map((x) => x.toLowerCase()).sort()).toEqual(
        [`CN=${p}mov,${B}`, `CN=${p}renamed,${A}`].map((x) => x.toLowerCase()).sort(),
      );
      for (const rep of [`${p}rep1`, `${p}rep2`]) {
        const [r] = byCn(changes, rep);
        expect(r).toMatchObject({ kind: 'update' });
        expect(String(r.object!.attributes.manager).toLowerCase()).toBe(`CN=${p}boss,${B}`.toLowerCase());
      }
      const [del] = byCn(changes, `${p}del`);
      expect(del).toMatchObject({ kind: 'delete', previousDn: `CN=${p}del,${A}` });
      const gone = changes.filter((x) => x.kind === 'delete' && !x.previousDn);
      expect(gone).toHaveLength(1);
      expect(gone[0].objectType).toBe('User');
    } finally {
      await c.close();
    }
  });

  test('an object moved into an excluded container is a delete at the next delta, and the group naming it is read again (its member value is no longer a reference)', async () => {
    const A = `OU=A,${top()}`;
    const p = `x${run}`;
    await user(`CN=${p},${A}`);
    await admin.add(`CN=${p}grp,${A}`, { objectClass: ['group'], sAMAccountName: [`${p}grp`], member: [`CN=${p},${A}`] });
    const c = connector({ containers: { exclude: [`OU=B,${top()}`] } });
    try {
      const w = await baseline(c);
      await admin.modifyDN(`CN=${p},${A}`, `CN=${p},OU=B,${top()}`);
      const changes = await delta(c, w);
      expect(changes.map((x) => x.kind).sort()).toEqual(['delete', 'update']);
      const [grp] = byCn(changes, `${p}grp`);
      expect(grp.object!.references).toBeUndefined();
      expect(String(grp.object!.attributes.member).toLowerCase()).toBe(`CN=${p},OU=B,${top()}`.toLowerCase());
    } finally {
      await c.close();
    }
  });

  test('the connection test refuses usn (and auto) for a bind account that cannot list deleted objects, naming the right; an administrator passes', async () => {
    const name = `r${run}`;
    const password = `Pw-${run}-Aa1!`;
    await dc.tool(['user', 'create', name, password]);
    const readerDN = `CN=${name},CN=Users,${dc.baseDN}`;
    for (const deltaStrategy of ['usn', 'auto']) {
      const c = connector({ bindDN: readerDN, bindPassword: password, deltaStrategy });
      try {
        await expect(c.testConnection()).rejects.toThrow(/cannot list deleted objects \(it lacks List Contents and Read Property on CN=Deleted Objects/);
      } finally {
        await c.close();
      }
    }
    const ts = connector({ bindDN: readerDN, bindPassword: password, deltaStrategy: 'timestamp' });
    await expect(ts.testConnection()).resolves.toMatchObject({ message: expect.stringContaining('readable') });
    await ts.close();
    const ok = connector();
    await expect(ok.testConnection()).resolves.toMatchObject({ message: expect.stringContaining('can list deleted objects') });
    await ok.close();
  });

  test('createContainers on AD: an add into OUs that do not exist creates them in order and lists them; without it the error names the missing parent', async () => {
    const dn = `CN=n${run},OU=Team,OU=New,${top()}`;
    const attributes = { objectClass: 'user', sAMAccountName: `n${run}` };
    const without = connector();
    try {
      const r = await without.export({ kind: 'add', objectType: 'User', dn, attributes });
      expect(r).toMatchObject({
        status: 'error',
        error: { code: 'not_found', message: expect.stringContaining(`Placing '${dn}': its parent 'OU=New,${top()}' does not exist`) },
      });
    } finally {
      await without.close();
    }
    const c = connector({ createContainers: true });
    try {
      const r = (await c.export({ kind: 'add', objectType: 'User', dn, attributes })) as Extract<ExportResult, { status: 'success' }>;
      expect(r).toMatchObject({ status: 'success', dn });
      expect(r.notes).toEqual([
        `Created the container OU=New,${top()} for ${dn} (createContainers).`,
        `Created the container OU=Team,OU=New,${top()} for ${dn} (createContainers).`,
      ]);
      const [e] = await admin.search({ base: dn, scope: 'base', filter: '(objectClass=*)', attributes: ['objectGUID'] });
      expect(e.dn.toLowerCase()).toBe(dn.toLowerCase());
    } finally {
      await c.close();
    }
  });

  test('least privilege: a non-admin account misses deletes in a usn delta and is refused; once it may list deleted objects (here: a Domain Admins member, as Samba keeps no permissions on CN=Deleted Objects to delegate) it passes and sees them', async () => {
    const name = `g${run}`;
    const password = `Pw-${run}-Bb2!`;
    await dc.tool(['user', 'create', name, password]);
    const dn = `CN=${name},CN=Users,${dc.baseDN}`;
    const victim = `CN=v${run},OU=A,${top()}`;
    await user(victim);
    const c = connector({ bindDN: dn, bindPassword: password });
    let w: string;
    try {
      w = await baseline(c);
      await admin.del(victim);
      // Without the right the tombstone is invisible: the delta reads no delete (what the connection test prevents).
      expect((await delta(c, w)).filter((x) => x.kind === 'delete')).toEqual([]);
      await expect(c.testConnection()).rejects.toThrow(/cannot list deleted objects/);
    } finally {
      await c.close();
    }
    await dc.tool(['group', 'addmembers', 'Domain Admins', name]);
    const granted = connector({ bindDN: dn, bindPassword: password });
    try {
      await expect(granted.testConnection()).resolves.toMatchObject({ message: expect.stringContaining('can list deleted objects') });
      expect((await delta(granted, w)).filter((x) => x.kind === 'delete').map((x) => x.previousDn)).toEqual([victim]);
    } finally {
      await granted.close();
    }
  });

  test('dirsync: refused without "Replicating Directory Changes"; with it a non-admin account is still refused on Samba (its DirSync shows deletes to administrators only), naming the missing right, by the connection test and by a delta import; auto picks timestamp, whose anchor-set comparison finds a delete', async () => {
    const name = `s${run}`;
    const password = `Pw-${run}-Cc3!`;
    await dc.tool(['user', 'create', name, password]);
    const dn = `CN=${name},CN=Users,${dc.baseDN}`;
    const A = `OU=A,${top()}`;
    const p = `ds${run}`;
    await user(`CN=${p}gone,${A}`);
    const without = connector({ bindDN: dn, bindPassword: password, deltaStrategy: 'dirsync' });
    await expect(without.testConnection()).rejects.toThrow(/lacks the "Replicating Directory Changes" right/);
    await without.close();
    await dc.tool(['dsacl', 'set', `--objectdn=${dc.baseDN}`, '--car=get-changes', '--action=allow', `--trusteedn=${dn}`]);
    const missing = new RegExp(
      `deltaStrategy dirsync: the DC is Samba, whose DirSync returns deleted objects to administrators only, and the bind account ${dn} lacks that right \\(it is not a member of Domain Admins`,
    );
    const dirsync = connector({ bindDN: dn, bindPassword: password, deltaStrategy: 'dirsync' });
    // A DirSync cookie taken as an administrator: the non-admin's delta from it is refused with the same words.
    const asAdmin = connector({ deltaStrategy: 'dirsync' });
    try {
      await expect(dirsync.testConnection()).rejects.toThrow(missing);
      await expect(dirsync.testConnection()).rejects.toMatchObject({ code: 'configuration_invalid' });
      const w = await baseline(asAdmin);
      await expect(delta(dirsync, w)).rejects.toThrow(missing);
    } finally {
      await dirsync.close();
      await asAdmin.close();
    }

    const auto = connector({ bindDN: dn, bindPassword: password, deltaStrategy: 'auto' });
    try {
      await expect(auto.testConnection()).resolves.toMatchObject({ message: expect.stringContaining('auto: timestamp delta') });
      let w = await baseline(auto);
      expect(JSON.parse(w)).toMatchObject({ s: 'timestamp' });
      const before = new Set<string>();
      for await (const page of auto.fullImport({ pageSize: 1000 })) for (const o of page.objects) before.add(o.anchor);
      expect(before.size).toBeGreaterThan(0);
      await admin.del(`CN=${p}gone,${A}`);
      // The deltas run until the anchor-set comparison (every 10th): the full import it asks for lacks the deleted user.
      let asked: string | undefined;
      for (let i = 0; i < 10 && !asked; i++) {
        for await (const page of auto.deltaImport(w, { pageSize: 1000 })) {
          expect(page.errors).toEqual([]);
          if (page.fullImportRequired) asked = page.fullImportRequired.reason;
          if (page.nextWatermark) w = page.nextWatermark;
        }
      }
      expect(asked).toMatch(/compares the full anchor set/);
      const after = new Set<string>();
      for await (const page of auto.fullImport({ pageSize: 1000 })) for (const o of page.objects) after.add(o.anchor);
      expect([...before].filter((a) => !after.has(a))).toHaveLength(1);
    } finally {
      await auto.close();
    }
  });

  test('dirsync (as an administrator): its deltas see a modify, a move, a move out of the containers and the group of a moved member', async () => {
    const A = `OU=A,${top()}`;
    const B = `OU=B,${top()}`;
    const p = `dm${run}`;
    await user(`CN=${p}mod,${A}`);
    await user(`CN=${p}mov,${A}`);
    await user(`CN=${p}out,${A}`);
    await admin.add(`CN=${p}grp,${A}`, { objectClass: ['group'], sAMAccountName: [`${p}grp`], member: [`CN=${p}mov,${A}`] });
    const c = connector({ deltaStrategy: 'dirsync', attributes: ['cn', 'sAMAccountName', 'member', 'manager', 'description', 'objectGUID', 'objectClass'] });
    try {
      const w = await baseline(c);
      expect(JSON.parse(w)).toMatchObject({ s: 'dirsync' });
      await admin.modify(`CN=${p}mod,${A}`, [new Change({ operation: 'replace', modification: new Attribute({ type: 'description', values: ['changed'] }) })]);
      await admin.modifyDN(`CN=${p}mov,${A}`, `CN=${p}mov,${B}`);
      await admin.modifyDN(`CN=${p}out,${A}`, `CN=${p}out,${out()}`);
      const changes = await delta(c, w);
      expect(byCn(changes, `${p}mod`)).toEqual([
        expect.objectContaining({ kind: 'update', object: expect.objectContaining({ attributes: expect.objectContaining({ description: 'changed' }) }) }),
      ]);
      expect(byCn(changes, `${p}mov`)[0].object!.dn!.toLowerCase()).toBe(`CN=${p}mov,${B}`.toLowerCase());
      const [grp] = byCn(changes, `${p}grp`);
      expect(grp.object!.references!.member.map((x) => x.toLowerCase())).toEqual([`CN=${p}mov,${B}`.toLowerCase()]);
      expect(changes.filter((x) => x.kind === 'delete')).toHaveLength(1);
      expect(changes).toHaveLength(4);
    } finally {
      await c.close();
    }
  });

  test('dirsync: a delete is named by the DN it had (read as an administrator: Samba returns tombstones through DirSync to administrators only); a second delta from the new cookie is empty', async () => {
    const A = `OU=A,${top()}`;
    const p = `dd${run}`;
    await user(`CN=${p}del,${A}`);
    const c = connector({ deltaStrategy: 'dirsync' });
    try {
      const w = await baseline(c);
      await admin.del(`CN=${p}del,${A}`);
      let next: string | undefined;
      const changes: DeltaChange[] = [];
      for await (const page of c.deltaImport(w, { pageSize: 1000 })) {
        changes.push(...page.changes);
        next = page.nextWatermark ?? next;
      }
      expect(changes).toEqual([expect.objectContaining({ kind: 'delete', previousDn: `CN=${p}del,${A}`, objectType: 'User' })]);
      expect(await delta(c, next!)).toEqual([]);
    } finally {
      await c.close();
    }
  });

  test("rule attribute names: AD's schema read from the subschema entry gives employeeid -> employeeID", async () => {
    const names = await directoryAttributeNames({
      host: 'localhost',
      port: dc.ldapsPort,
      security: 'ldaps',
      caCertificate: dc.caCertificate,
      bindDN: dc.adminDN,
      bindPassword: dc.adminPassword,
      baseDN: dc.baseDN,
    });
    expect(names?.get('employeeid')).toBe('employeeID');
    expect(names?.get('samaccountname')).toBe('sAMAccountName');
    expect(names?.has('employeid')).toBe(false);
    const rule = canonicalizeRule(
      {
        ruleName: 'r',
        ruleType: 'FlowRule',
        connectorId: '00000000-0000-4000-8000-000000000001',
        sourceAttribute: 'employeeid',
        targetAttribute: 'employeeId',
        confidence: 50,
      },
      names!,
      'active_directory',
    );
    expect(rule.sourceAttribute).toBe('employeeID');
  });

  test('over HTTP: creating an active_directory connector with a bind account that cannot list deleted objects is a 400 naming the right, nothing stored; with timestamp it is saved; the test of an administrator says it can list deleted objects; a rule naming employeeid is stored as employeeID', async () => {
    const svc = await startService();
    try {
      const name = `h${run}`;
      const password = `Pw-${run}-Dd4!`;
      await dc.tool(['user', 'create', name, password]);
      const config = {
        host: 'localhost',
        port: dc.ldapsPort,
        caCertificate: dc.caCertificate,
        baseDN: top(),
        bindDN: `CN=${name},CN=Users,${dc.baseDN}`,
        bindPassword: password,
        deltaStrategy: 'usn',
      };
      const res = await svc.call('POST', 'connectors', { body: { name: 'AD least privilege', type: 'active_directory', config } });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([
        {
          path: '/config',
          message: expect.stringMatching(
            /^configuration_invalid: deltaStrategy usn: the bind account .* cannot list deleted objects \(it lacks List Contents and Read Property on CN=Deleted Objects,DC=samdom,DC=test\)/,
          ),
        },
      ]);
      expect(JSON.stringify(res.body)).not.toContain(password);
      expect((await svc.call('GET', 'connectors')).body.connectors).toEqual([]);
      // Saved with a strategy that needs no tombstones, then switched on the directory side: the test on demand says so.
      const saved = await svc.call('POST', 'connectors', {
        body: { name: 'AD timestamp', type: 'active_directory', config: { ...config, deltaStrategy: 'timestamp' } },
      });
      expect(saved.status).toBe(201);
      const ok = await svc.call('POST', `connectors/${saved.body.id}/test`, { role: 'Operator' });
      expect(ok.body).toMatchObject({ ok: true });
      const admin = await svc.call('POST', 'connectors', {
        body: { name: 'AD admin', type: 'active_directory', config: { ...config, bindDN: dc.adminDN, bindPassword: dc.adminPassword } },
      });
      expect(admin.status).toBe(201);
      const test = await svc.call('POST', `connectors/${admin.body.id}/test`, { role: 'Operator' });
      expect(test.body).toMatchObject({ ok: true, message: expect.stringContaining('it can list deleted objects') });
      const rule = await svc.call('POST', 'rules', {
        body: {
          ruleName: 'employee id',
          ruleType: 'FlowRule',
          connectorId: admin.body.id,
          sourceAttribute: 'employeeid',
          targetAttribute: 'employeeId',
          confidence: 50,
        },
      });
      expect(rule.body).toMatchObject({ sourceAttribute: 'employeeID', targetAttribute: 'employeeId' });
      const typo = await svc.call('POST', 'rules', {
        body: { ruleName: 'typo', ruleType: 'JoinRule', connectorId: admin.body.id, sourceAttribute: 'employeid', targetAttribute: 'employeeId' },
      });
      expect(typo.status).toBe(400);
      expect(typo.body.errors).toEqual([
        {
          path: '/sourceAttribute',
          message: "'employeid' is not an attribute of the directory's schema (active_directory connector) (did you mean 'employeeID'?)",
        },
      ]);
    } finally {
      await svc.dispose();
    }
  });

  test('end to end over HTTP: after a usn delta the mesh group has the relationships and the member values AD has, and so has its connector-space object (a moved, a renamed and a deleted member), the report the moved manager', async () => {
    const svc = await startService();
    try {
      const base = `OU=e2e,${top()}`;
      const A = `OU=A,${base}`;
      const B = `OU=B,${base}`;
      for (const dn of [base, A, B]) await admin.add(dn, { objectClass: ['organizationalUnit'] });
      const p = `e${run}`;
      const dnOf = (n: string, ou = A) => `CN=${p}${n},${ou}`;
      for (const n of ['m1', 'm2', 'm3', 'm4', 'boss']) await user(dnOf(n));
      await user(dnOf('rep'), { manager: [dnOf('boss')] });
      await admin.add(dnOf('grp'), { objectClass: ['group'], sAMAccountName: [`${p}grp`], member: ['m1', 'm2', 'm3', 'm4'].map((n) => dnOf(n)) });
      const res = await svc.call('POST', 'connectors', {
        body: {
          name: 'AD e2e',
          type: 'active_directory',
          config: {
            host: 'localhost',
            port: dc.ldapsPort,
            caCertificate: dc.caCertificate,
            bindDN: dc.adminDN,
            bindPassword: dc.adminPassword,
            baseDN: base,
            deltaStrategy: 'usn',
            attributes: ['cn', 'sAMAccountName', 'member', 'manager', 'objectGUID', 'objectClass'],
          },
        },
      });
      expect(res.status).toBe(201);
      const id = res.body.id as string;
      await rule(svc, {
        ruleType: 'ProjectionRule',
        connectorId: id,
        sourceAttribute: 'sAMAccountName',
        objectType: 'Group',
        priority: 10,
        transformScript: 'object.objectClass.includes("group")',
      });
      await rule(svc, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'sAMAccountName', objectType: 'User', priority: 20 });
      for (const a of ['cn', 'member', 'manager'])
        await rule(svc, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: a, targetAttribute: a, confidence: 50 });
      expect(await runImport(svc, id)).toMatchObject({ status: 'Completed' });
      const before = await meshOf(id);
      expect(targets(before.get(`${p}grp`), 'member')).toEqual(
        idsOf(
          before,
          ['m1', 'm2', 'm3', 'm4'].map((n) => `${p}${n}`),
        ),
      );

      await admin.modifyDN(dnOf('m1'), dnOf('m1', B));
      await admin.modifyDN(dnOf('m2'), dnOf('m2x'));
      await admin.del(dnOf('m3'));
      await admin.modifyDN(dnOf('boss'), dnOf('boss', B));
      // The moved, renamed and deleted members, the moved manager, and the group and the report read again.
      expect(await runImport(svc, id, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 6, errors: 0 } });
      const after = await meshOf(id);
      const grp = after.get(`${p}grp`);
      expect(targets(grp, 'member')).toEqual(
        idsOf(
          before,
          ['m1', 'm2', 'm4'].map((n) => `${p}${n}`),
        ),
      );
      const lower = (v: unknown) => (Array.isArray(v) ? v : [v]).map((x) => String(x).toLowerCase()).sort();
      expect(lower(grp!.attributes.member.value)).toEqual(lower([dnOf('m1', B), dnOf('m2x'), dnOf('m4')]));
      const rep = after.get(`${p}rep`);
      expect(targets(rep, 'manager')).toEqual(idsOf(before, [`${p}boss`]));
      expect(lower(rep!.attributes.manager.value)).toEqual(lower([dnOf('boss', B)]));
      expect(after.has(`${p}m3`)).toBe(false);
      // The connector space holds the values AD has (the group and the report were read again by the delta).
      const cs = new Map<string, Record<string, unknown>>();
      for await (const page of iterateCsObjects(id)) for (const o of page) if (!o.deleted) cs.set(String(o.attributes.cn), o.attributes);
      expect(lower(cs.get(`${p}grp`)!.member)).toEqual(lower([dnOf('m1', B), dnOf('m2x'), dnOf('m4')]));
      expect(lower(cs.get(`${p}rep`)!.manager)).toEqual(lower([dnOf('boss', B)]));

      // A member deleted and nothing else: AD drops it from the group without moving the group's uSNChanged,
      // so the delta does not read the group; the engine drops the value from the group's objects itself.
      await admin.del(dnOf('m4'));
      expect(await runImport(svc, id, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
      const last = await meshOf(id);
      expect(targets(last.get(`${p}grp`), 'member')).toEqual(
        idsOf(
          before,
          ['m1', 'm2'].map((n) => `${p}${n}`),
        ),
      );
      expect(lower(last.get(`${p}grp`)!.attributes.member.value)).toEqual(lower([dnOf('m1', B), dnOf('m2x')]));
      const cs2 = new Map<string, Record<string, unknown>>();
      for await (const page of iterateCsObjects(id)) for (const o of page) if (!o.deleted) cs2.set(String(o.attributes.cn), o.attributes);
      expect(lower(cs2.get(`${p}grp`)!.member)).toEqual(lower([dnOf('m1', B), dnOf('m2x')]));
    } finally {
      await svc.dispose();
    }
  });
});
