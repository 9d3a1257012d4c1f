import { Client } from 'ldapts';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { projectedMeshId } from '../../../lib/mesh/model';
import { anchoredCsObjectId, indexCsObjectIds } from '../../../lib/sync/space/csIds';
import { startPostgres, type Postgres } from '../../support/postgres';
import { serverAvailable } from '../../support/servers';
import { startService, type Answer, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from '../ldap/ldapFixture';
import { ldapConnector, outboundFlows, PEOPLE_OUTBOUND } from '../ldap/e2eSupport';
import { pgServer, type SqlServer } from '../sql/sqlFixture';
import { rule, runExport, runImport } from '../sync/syncSupport';

/**
 * Secret attributes masked on every road that shows values, against a real PostgreSQL HR source (columns
 * `initial_password`, a built-in secret, and `pin`, named in Mesh__SecretAttributes) and a real slapd target
 * (the mesh's initialPassword flows to userPassword): the mesh list, detail, search results and columns,
 * connector-space detail of the source and the target (values, pending export, exported values), history,
 * explain, run changes, one-object preview and sync, and the configuration export show `********`; a search
 * criterion on a secret is a 400 that is the same whatever prefix it probes; the directory still gets the real
 * password (a bind with it succeeds); and no answer or log line carries a secret value.
 */
jest.setTimeout(300_000);

const MASK = '********';
const PEOPLE = [
  { id: 'P001', given: 'Ada', sn: 'Lovelace', department: 'Engineering', password: 'Init-P001-Xq7!kd', pin: 'pin-8841-qz' },
  { id: 'P002', given: 'Alan', sn: 'Turing', department: 'Engineering', password: 'Init-P002-Rw3#mb', pin: 'pin-5309-wv' },
  { id: 'P003', given: 'Grace', sn: 'Hopper', department: 'Engineering', password: 'Init-P003-Tz9$pl', pin: 'pin-2718-xs' },
];
/** What a disable writes to a leaver's password (a deprovisioning secret of the directory's configuration). */
const SCRAMBLE = 'Scrambled-Zq8&ew4Lp';
const SECRETS = () => [...PEOPLE.flatMap((p) => [p.password, p.pin]), SCRAMBLE];

(serverAvailable('slapd') && serverAvailable('postgres') ? describe : describe.skip)(
  'secret attributes masked everywhere (PostgreSQL HR, slapd target, Mesh__SecretAttributes=pin)',
  () => {
    let slapd: Slapd;
    let pg: Postgres;
    let server: SqlServer;
    let db: string;
    let rt: ServiceUnderTest;
    let f: SlapdFixture;
    let hr: string;
    let dir: string;
    /** Every answer the suite read, to look for a secret in all of them at the end. */
    const answers: Answer[] = [];
    const call = async (...args: Parameters<ServiceUnderTest['call']>) => {
      const res = await rt.call(...args);
      answers.push(res);
      return res;
    };
    const csId = async (anchor: string) => {
      const id = anchoredCsObjectId(hr, anchor);
      await indexCsObjectIds(hr, [{ csObjectId: id, anchor }]);
      return id;
    };
    const meshId = (anchor: string) => projectedMeshId(hr, anchor);

    beforeAll(async () => {
      [slapd, pg] = await Promise.all([startSlapd(), startPostgres()]);
      server = pgServer(pg);
      db = await server.newDatabase();
      await server.exec(
        db,
        'CREATE TABLE staff (employee_id varchar(20) PRIMARY KEY, given_name text, sn text, department text, initial_password text, pin text)',
      );
      for (const p of PEOPLE) await server.exec(db, 'INSERT INTO staff VALUES (?, ?, ?, ?, ?, ?)', [p.id, p.given, p.sn, p.department, p.password, p.pin]);
      rt = await startService({ env: { Mesh__SecretAttributes: 'pin, *Ssn' } });
      f = await new SlapdFixture(slapd).init();
      const res = await rt.call('POST', 'connectors', {
        body: {
          name: 'HR',
          type: 'sql',
          config: {
            dialect: 'postgres',
            host: pg.host,
            port: pg.port,
            database: db,
            user: pg.user,
            password: pg.password,
            anchorColumn: 'employee_id',
            fullImportQuery: 'SELECT employee_id, given_name, sn, department, initial_password, pin FROM staff',
            // A leaver of three is a third of the source: no delete threshold here (the gate is not what is tested).
            thresholds: { deletes: {} },
          },
        },
      });
      expect(res.status).toBe(201);
      hr = res.body.id as string;
      for (const [source, target] of [
        ['employee_id', 'employeeId'],
        ['given_name', 'givenName'],
        ['sn', 'sn'],
        ['department', 'department'],
        ['initial_password', 'initialPassword'],
        ['pin', 'pin'],
      ])
        await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: source, targetAttribute: target, confidence: 50 });
      // passwordOnUpdate: a changed password goes with the object's next update too.
      // A leaver is disabled: its password scrambled (a secret of the configuration) and a description set.
      dir = await ldapConnector(rt, 'Directory', {
        ...f.config({ passwordOnUpdate: true }),
        deprovisioning: { action: 'disable', disableAttributes: { userPassword: SCRAMBLE, description: 'disabled' } },
      });
      await outboundFlows(rt, dir, [...PEOPLE_OUTBOUND, ['initialPassword', 'userPassword']]);
      // Imported before HR projects: the rows wait in HR's connector space, joined to nothing.
      expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    });
    afterAll(async () => {
      await rt?.dispose();
      await f?.cleanup();
      await closeParkedSearches();
      await slapd?.stop();
      await pg?.stop();
    });

    test('one-object preview and sync show the secret attributes as ******** (mesh changes and the directory add)', async () => {
      await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employee_id', objectType: 'User' });
      const id = await csId('P001');
      const preview = await call('POST', `connectors/${hr}/space/${id}/preview`, { role: 'Operator' });
      expect(preview.status).toBe(200);
      const changes = Object.fromEntries((preview.body.meshChanges as { attribute: string; old: unknown; new: unknown }[]).map((c) => [c.attribute, c]));
      expect(changes.initialPassword).toMatchObject({ old: null, new: MASK });
      expect(changes.pin).toMatchObject({ old: null, new: MASK });
      expect(changes.givenName).toMatchObject({ old: null, new: 'Ada' });
      expect(preview.body.exports).toHaveLength(1);
      expect(preview.body.exports[0]).toMatchObject({ connectorId: dir, operation: 'Add' });
      expect(preview.body.exports[0].attributes.userPassword).toEqual({ old: null, new: MASK });
      expect(preview.body.exports[0].attributes.uid).toEqual({ old: null, new: 'P001' });

      const synced = await call('POST', `connectors/${hr}/space/${id}/sync`, { role: 'Operator' });
      expect(synced.status).toBe(200);
      expect(synced.body).toEqual({ ...preview.body, applied: true });
      // Masked only for showing: the mesh holds the real values.
      const detail = await call('GET', `mesh/objects/${meshId('P001')}`, { role: 'Viewer' });
      expect(detail.status).toBe(200);
      const shown = Object.fromEntries(
        (detail.body.attributes as { attributeName: string; attributeValue: string }[]).map((a) => [a.attributeName, a.attributeValue]),
      );
      expect(shown).toMatchObject({ givenName: 'Ada', initialPassword: MASK, pin: MASK });
    });

    test('mesh list (columns), detail, search results, run changes and connector-space detail of the source mask them', async () => {
      const run = await runImport(rt, hr);
      expect(run).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
      const list = await call('GET', 'mesh/objects?objectType=User&take=50', { role: 'Viewer' });
      expect(list.status).toBe(200);
      expect(list.body.totalCount).toBe(3);
      for (const item of list.body.items) {
        expect(item.attributeValues).toMatchObject({ initialPassword: MASK, pin: MASK });
        expect(item.attributeValues.givenName).toEqual(expect.any(String));
      }

      const found = await call('POST', 'mesh/objects/search', {
        role: 'Viewer',
        body: { objectType: 'User', criteria: [{ attributeName: 'givenName', operator: 'equals', value: 'Alan' }] },
      });
      expect(found.status).toBe(200);
      expect(found.body.items).toHaveLength(1);
      expect(found.body.items[0]).toMatchObject({ anchorValue: 'P002', attributeValues: { givenName: 'Alan', initialPassword: MASK, pin: MASK } });

      const changes = await call('GET', `runs/${run.runId}/changes?take=100`, { role: 'Viewer' });
      expect(changes.status).toBe(200);
      const created = (changes.body.items as { attributes: Record<string, { old: unknown; new: unknown }> }[]).filter((c) => c.attributes.pin);
      expect(created.length).toBeGreaterThanOrEqual(2);
      for (const c of created) {
        expect(c.attributes.pin).toEqual({ old: null, new: MASK });
        expect(c.attributes.initialPassword).toEqual({ old: null, new: MASK });
      }

      const cs = await call('GET', `connectors/${hr}/space/${await csId('P002')}`, { role: 'Viewer' });
      expect(cs.status).toBe(200);
      expect(cs.body.attributes).toMatchObject({ employee_id: 'P002', given_name: 'Alan', initial_password: MASK, pin: MASK });
    });

    test('a search or filter on a secret attribute is a 400 naming it and its rule, whatever prefix it probes', async () => {
      const refused = async (criterion: Record<string, unknown>) => {
        const res = await call('POST', 'mesh/objects/search', {
          role: 'Viewer',
          body: { criteria: [{ attributeName: 'givenName', operator: 'ispresent' }, criterion] },
        });
        expect(res.status).toBe(400);
        expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
        expect(res.body.code).toBe('validation_failed');
        return { detail: res.body.detail as string, errors: res.body.errors as { path: string; message: string }[] };
      };
      const right = await refused({ attributeName: 'pin', operator: 'startswith', value: PEOPLE[0].pin.slice(0, 5) });
      const wrong = await refused({ attributeName: 'pin', operator: 'startswith', value: 'zzzzz' });
      expect(right.detail).toMatch(/secret attribute 'pin' \('pin' in the setting Mesh:SecretAttributes\)/);
      expect(right.errors).toEqual([{ path: '/criteria/1/attributeName', message: expect.stringMatching(/'pin' is a secret attribute/) }]);
      // The probe learns nothing: the right prefix and a wrong one get the same answer.
      expect(wrong).toEqual(right);
      expect(await refused({ attributeName: 'PIN', operator: 'ispresent' })).toMatchObject({ detail: expect.stringMatching(/'PIN'/) });
      const builtIn = await refused({ attributeName: 'initialPassword', operator: 'equals', value: PEOPLE[0].password });
      expect(builtIn.detail).toMatch(/'initialPassword' \(the built-in secret attribute rule '\*password'\)/);
      expect(await refused({ attributeName: 'employeeSsn', operator: 'contains', value: '1' })).toMatchObject({
        detail: expect.stringMatching(/'\*ssn' in the setting/),
      });
      // The same search on a secret-free attribute answers.
      const ok = await call('POST', 'mesh/objects/search', {
        role: 'Viewer',
        body: { criteria: [{ attributeName: 'sn', operator: 'startswith', value: 'Lo' }] },
      });
      expect(ok.status).toBe(200);
      expect(ok.body.totalCount).toBe(1);
    });

    test('the directory gets the real password; its pending export and explain show ********, nothing records it', async () => {
      const pending = await call('GET', `connectors/${dir}/space?state=pendingExport&take=50`);
      expect(pending.status).toBe(200);
      expect(pending.body.items.length).toBe(3);
      const staged = await call('GET', `connectors/${dir}/space/${pending.body.items[0].csObjectId}`);
      expect(staged.status).toBe(200);
      expect(staged.body.pendingExport.attributes.userPassword).toEqual({ old: null, new: MASK });
      expect(staged.body.pendingExport.attributes.uid.new).toMatch(/^P00\d$/);

      const exported = await runExport(rt, dir);
      expect(exported).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
      const exportChanges = await call('GET', `runs/${exported.runId}/changes?take=100`);
      expect(exportChanges.status).toBe(200);
      expect(exportChanges.body.items).toHaveLength(3);
      // A write-only secret is never recorded by the export (not in the connector space, not in the run's changes).
      for (const c of exportChanges.body.items) {
        expect(c.attributes.uid).toEqual({ old: null, new: expect.stringMatching(/^P00\d$/) });
        expect(c.attributes).not.toHaveProperty('userPassword');
      }

      // The target has the real value: each person binds with the initial password.
      for (const p of PEOPLE) {
        const user = new Client({ url: slapd.url });
        try {
          await expect(user.bind(`uid=${p.id},ou=Engineering,${f.base}`, p.password)).resolves.toBeUndefined();
        } finally {
          await user.unbind().catch(() => undefined);
        }
      }

      // userPassword is a write-only secret: never recorded as exported, never read back (nothing to wait for).
      const dirCs = anchoredCsObjectIdOf(await call('GET', `connectors/${dir}/space?take=50`), 'P001');
      const awaiting = await call('GET', `connectors/${dir}/space/${dirCs}`);
      expect(awaiting.status).toBe(200);
      expect(awaiting.body.exportedValues.uid).toBe('P001');
      expect(awaiting.body.exportedValues).not.toHaveProperty('userPassword');
      expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
      const confirmed = await call('GET', `connectors/${dir}/space/${dirCs}`, { role: 'Viewer' });
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.attributes.uid).toBe('P001');
      expect(confirmed.body.attributes).not.toHaveProperty('userPassword');

      const explain = await call('GET', `mesh/objects/${meshId('P001')}/attributes/initialPassword/explain`, { role: 'Viewer' });
      expect(explain.status).toBe(200);
      expect(explain.body.value).toBe(MASK);
      expect(explain.body.winner.value).toBe(MASK);
      expect(explain.body.exports).toEqual([expect.objectContaining({ connectorId: dir, targetAttribute: 'userPassword', value: MASK })]);
      const pin = await call('GET', `mesh/objects/${meshId('P001')}/attributes/pin/explain`, { role: 'Viewer' });
      expect(pin.status).toBe(200);
      expect(pin.body).toMatchObject({ value: MASK, winner: { value: MASK } });
    });

    test('history shows a changed secret as ******** to ********; the directory update shows it masked and writes the new one', async () => {
      const p = PEOPLE[1];
      const [oldPassword, oldPin] = [p.password, p.pin];
      p.password = 'Next-P002-Hy5%nc';
      p.pin = 'pin-6642-ru';
      await server.exec(db, 'UPDATE staff SET initial_password = ?, pin = ?, given_name = ? WHERE employee_id = ?', [p.password, p.pin, 'Alan M.', p.id]);
      expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
      const history = await call('GET', `mesh/objects/${meshId(p.id)}/history`, { role: 'Viewer' });
      expect(history.status).toBe(200);
      const latest = history.body.items[0].changes as { attribute: string; old: unknown; new: unknown }[];
      expect(latest).toEqual(
        expect.arrayContaining([
          { attribute: 'givenName', old: 'Alan', new: 'Alan M.' },
          { attribute: 'initialPassword', old: MASK, new: MASK },
          { attribute: 'pin', old: MASK, new: MASK },
        ]),
      );

      const dirCs = anchoredCsObjectIdOf(await call('GET', `connectors/${dir}/space?take=50`), p.id);
      const pending = await call('GET', `connectors/${dir}/space/${dirCs}`, { role: 'Viewer' });
      expect(pending.status).toBe(200);
      expect(pending.body.pendingExport).toMatchObject({ operation: 'Update' });
      expect(pending.body.pendingExport.attributes.givenName).toEqual({ old: 'Alan', new: 'Alan M.' });
      expect(pending.body.pendingExport.attributes.userPassword).toEqual({ old: null, new: MASK });
      const exported = await runExport(rt, dir);
      expect(exported).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
      const user = new Client({ url: slapd.url });
      try {
        await expect(user.bind(`uid=${p.id},ou=Engineering,${f.base}`, oldPassword)).rejects.toThrow(/invalid credentials|0x31/i);
        await expect(user.bind(`uid=${p.id},ou=Engineering,${f.base}`, p.password)).resolves.toBeUndefined();
      } finally {
        await user.unbind().catch(() => undefined);
      }
      PEOPLE.push({ ...p, password: oldPassword, pin: oldPin });
    });

    test('a scrambled password in disableAttributes is kept like a connector secret: ******** in the connector, its history and the configuration export, kept by a PUT of ********, and written by the disable', async () => {
      const got = await call('GET', `connectors/${dir}`, { role: 'Viewer' });
      expect(got.status).toBe(200);
      expect(got.body.config.deprovisioning.disableAttributes).toEqual({ userPassword: MASK, description: 'disabled' });
      const exported = await call('GET', 'config/export');
      expect(exported.body.connectors.find((c: { id: string }) => c.id === dir).config.deprovisioning.disableAttributes.userPassword).toBe(MASK);
      const put = await call('PUT', `connectors/${dir}`, { body: { name: got.body.name, config: got.body.config } });
      expect(put.status).toBe(200);
      expect(put.body.config.deprovisioning.disableAttributes.userPassword).toBe(MASK);
      const history = await call('GET', `config/history?targetType=connector&targetId=${dir}`);
      expect(history.status).toBe(200);
      expect(history.body.items.length).toBeGreaterThanOrEqual(2);
      for (const v of history.body.items) expect(v.after.config.deprovisioning.disableAttributes.userPassword).toBe(MASK);

      // The leaver: gone from HR, disabled in the directory with the kept scrambled password.
      const leaver = PEOPLE[2];
      await server.exec(db, 'DELETE FROM staff WHERE employee_id = ?', [leaver.id]);
      expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
      expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
      const user = new Client({ url: slapd.url });
      try {
        await expect(user.bind(`uid=${leaver.id},ou=Engineering,${f.base}`, leaver.password)).rejects.toThrow(/invalid credentials|0x31/i);
        await expect(user.bind(`uid=${leaver.id},ou=Engineering,${f.base}`, SCRAMBLE)).resolves.toBeUndefined();
      } finally {
        await user.unbind().catch(() => undefined);
      }
    });

    test('the configuration export and every answer and log line of the suite carry no secret value', async () => {
      const config = await call('GET', 'config/export');
      expect(config.status).toBe(200);
      expect(config.body.connectors.find((c: { id: string }) => c.id === hr).config.password).toBe(MASK);

      const texts = [...answers.map((a) => a.text), rt.logs()];
      for (const secret of SECRETS()) for (const text of texts) expect(text.includes(secret) ? secret : '').toBe('');
    });
  },
);

/** The csObjectId of the connector-space item whose anchor (a directory entryUUID) or DN names `uid`. */
function anchoredCsObjectIdOf(list: Answer, uid: string): string {
  const item = (list.body.items as { csObjectId: string; dn: string | null }[]).find((i) => i.dn?.toLowerCase().startsWith(`uid=${uid.toLowerCase()},`));
  if (!item) throw new Error(`no connector-space object for ${uid}: ${list.text}`);
  return item.csObjectId;
}
