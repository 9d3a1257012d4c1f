import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { schemaErrors } from '../../../lib/core/validation/ajv';
import { ConnectorSpaceObject } from '../../../lib/schemas/connectorSpace';
import { readCsObjects } from '../../../lib/sync/space/connectorSpace';
import { anchoredCsObjectId, stagedCsObjectId } from '../../../lib/sync/space/csIds';
import { skippedNote } from '../../../lib/sync/export/exportRetry';
import { readStagedAdd } from '../../../lib/sync/export/stagedAdds';
import { describeWithServer } from '../../support/servers';
import { startService, USERS, type ServiceUnderTest } from '../../support/service';
import { startSlapd, type Slapd } from '../../support/slapd';
import { rule, runExport, runImport, sourceRules, writeCsv } from '../sync/syncSupport';
import { ldapConnector, meshOf, outboundFlows, PEOPLE_OUTBOUND } from './e2eSupport';
import { SlapdFixture } from './ldapFixture';

/**
 * Export retry against a real directory that refuses two objects (entries already in the way), with
 * Export__MaxAttempts=2: an add (E001: no object in the target, a staged add) and a move (E002: its new DN is
 * taken). The first exports record the failures with their attempts while the other objects export; once at
 * the maximum, exports skip them (the target is not called: no error, no attempt counted) and say so once;
 * with the cause removed, POST .../space/{csObjectId}/retry resets them and the next export applies both.
 */
jest.setTimeout(300_000);

describeWithServer('slapd')('export retry (slapd, Azurite, over HTTP)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;
  let hr: string;
  let dir: string;
  let hrDir: string;
  const people: Record<string, string>[] = [];
  const header = ['id', 'employeeId', 'givenName', 'sn', 'department'];
  const person = (n: number, department = 'Engineering') => ({ id: `h${n}`, employeeId: `E00${n}`, givenName: `Given${n}`, sn: `Surname${n}`, department });
  const writePeople = () => writeCsv(hrDir, 'people.csv', header, people);
  const exists = async (dn: string) => {
    try {
      const { searchEntries } = await (await f.client()).search(dn, { scope: 'base' });
      return searchEntries.length === 1;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService({ env: { Export__MaxAttempts: '2' } });
    f = await new SlapdFixture(slapd).init();
    // In the way: E001 where its add would put it, and an entry where E002 will be moved to.
    await f.seed([
      { key: 'E001', givenName: 'Other', sn: 'One', container: 'Engineering' },
      { key: 'E002', givenName: 'Other', sn: 'Two', container: 'Sales' },
    ]);
    hrDir = path.join(rt.dataDir, 'files', 'hr');
    mkdirSync(hrDir, { recursive: true });
    people.push(person(1), person(2), person(3));
    writePeople();
    const res = await rt.call('POST', 'connectors', {
      body: { name: 'HR', type: 'custom', config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' } } },
    });
    expect(res.status).toBe(201);
    hr = res.body.id as string;
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'department']);
    dir = await ldapConnector(rt, 'Directory', f.config());
    await outboundFlows(rt, dir, PEOPLE_OUTBOUND);
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await closeParkedSearches();
    await slapd?.stop();
  });

  test('refused changes are retried up to Export__MaxAttempts, then skipped while the rest export, then retried on request', async () => {
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    const e001 = (await meshOf(hr)).get('E001')!.id;
    const stagedId = stagedCsObjectId(dir, e001);

    // 1: E002 and E003 are added; E001's add fails (attempt 1), a staged add with no anchor.
    const run1 = await runExport(rt, dir);
    expect(run1).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsCreated: 2, errors: 1 } });
    expect(run1.errors).toEqual([{ object: 'E001', message: `An entry with the DN 'uid=E001,ou=Engineering,${f.base}' already exists.` }]);
    let staged = await readStagedAdd(dir, e001);
    expect(staged).toMatchObject({ csObjectId: stagedId, pendingExport: { kind: 'add' }, exportError: { attempts: 1, runId: run1.runId } });

    // 2: E002 moves to Sales (taken: its move fails, attempt 1 on its row); E004 is new; E001 fails again.
    people[1].department = 'Sales';
    people.push(person(4));
    writePeople();
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed' });
    const run2 = await runExport(rt, dir);
    expect(run2).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsCreated: 1, objectsUpdated: 0, errors: 2 } });
    staged = await readStagedAdd(dir, e001);
    expect(staged?.exportError).toMatchObject({ attempts: 2, runId: run2.runId });
    const e002Anchor = (await meshOf(dir)).get('E002')!.links[dir];
    const e002Row = async () => (await readCsObjects(dir, [e002Anchor])).get(e002Anchor)!;
    expect((await e002Row()).exportError).toMatchObject({ attempts: 1, runId: run2.runId });
    expect((await e002Row()).pendingExport).toMatchObject({ kind: 'update', attributes: { departmentNumber: 'Sales' } });
    // An import of the target (it rewrites the rows it reads) keeps the pending change and its attempts.
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed' });
    expect((await e002Row()).exportError).toMatchObject({ attempts: 1, runId: run2.runId });
    expect((await e002Row()).pendingExport).toMatchObject({ kind: 'update', attributes: { departmentNumber: 'Sales' } });

    // 3: E001 is at the maximum: skipped (not attempted: no error, its failure is still run 2's). E002 fails
    // (attempt 2), E005 is added.
    people.push(person(5));
    writePeople();
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed' });
    const run3 = await runExport(rt, dir);
    expect(run3).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsProcessed: 2, objectsCreated: 1, errors: 1 } });
    expect(run3.errors[0]).toEqual(skippedNote(1, 2));
    expect((await readStagedAdd(dir, e001))?.exportError).toMatchObject({ attempts: 2, runId: run2.runId });
    expect((await e002Row()).exportError).toMatchObject({ attempts: 2, runId: run3.runId });

    // 4: both at the maximum: nothing is attempted, the run completes and says one object was skipped (E002,
    // marked by its failure; E001 was not marked by a skip and is not looked at).
    const run4 = await runExport(rt, dir);
    expect(run4).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, objectsCreated: 0, objectsUpdated: 0, errors: 0 } });
    expect(run4.errors).toEqual([skippedNote(1, 2)]);
    expect((await e002Row()).exportError).toMatchObject({ attempts: 2, runId: run3.runId });
    expect(await exists(`uid=E002,ou=Engineering,${f.base}`)).toBe(true);

    // The API: 403 for a Viewer, 400 for a malformed id, 404 for unknown ones; nothing changes.
    const e002Id = anchoredCsObjectId(dir, e002Anchor);
    const retry = (connectorId: string, id: string, role: 'Operator' | 'Viewer' = 'Operator') =>
      rt.call('POST', `connectors/${connectorId}/space/${id}/retry`, { role });
    expect((await retry(dir, stagedId, 'Viewer')).status).toBe(403);
    const bad = await retry(dir, 'not-a-guid');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(bad.body).toMatchObject({ code: 'validation_failed', errors: [{ path: 'csObjectId', message: 'must be a GUID' }] });
    expect(bad.body.detail).toContain('csObjectId');
    const unknownObject = await retry(dir, randomUUID());
    expect(unknownObject.status).toBe(404);
    expect(unknownObject.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect((await retry(randomUUID(), stagedId)).status).toBe(404);
    expect((await retry(hr, stagedId)).status).toBe(404);
    expect((await readStagedAdd(dir, e001))?.exportError?.attempts).toBe(2);

    // The cause goes; retry both (Operator): 200 with the item, the error gone, the change still pending.
    await f.remove('E001');
    await f.remove('E002');
    const r1 = await retry(dir, stagedId);
    expect(r1.status).toBe(200);
    expect(r1.body).toEqual({
      csObjectId: stagedId,
      anchor: null,
      dn: null,
      objectType: 'User',
      meshObjectId: e001,
      pendingExport: { operation: 'Add', attributeCount: 5, stagedOn: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) },
      awaitingConfirmation: false,
      error: null,
      lastImportedOn: null,
      lastExportedOn: null,
    });
    const r2 = await retry(dir, e002Id);
    expect(r2.status).toBe(200);
    for (const item of [r1.body, r2.body]) expect(schemaErrors(ConnectorSpaceObject, item)).toEqual([]);
    expect(r2.body).toMatchObject({
      csObjectId: e002Id,
      anchor: e002Anchor,
      dn: `uid=E002,ou=Engineering,${f.base}`,
      meshObjectId: (await meshOf(hr)).get('E002')!.id,
      pendingExport: { operation: 'Update', attributeCount: 1 },
      error: null,
      lastExportedOn: expect.any(String),
    });
    const audit = await rt.call('GET', `audit?targetType=connectorSpaceObject&targetId=${stagedId}`);
    expect(audit.body.items).toEqual([
      expect.objectContaining({ action: 'retry', targetType: 'connectorSpaceObject', targetId: stagedId, actorUpn: USERS.Operator.upn, outcome: 'success' }),
    ]);

    // 5: the next export applies both; the added object keeps its id, now with an anchor.
    const run5 = await runExport(rt, dir);
    expect(run5).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1, objectsUpdated: 1, errors: 0 } });
    expect(run5.errors ?? []).toEqual([]);
    expect(await exists(`uid=E001,ou=Engineering,${f.base}`)).toBe(true);
    expect(await exists(`uid=E002,ou=Sales,${f.base}`)).toBe(true);
    expect(await readStagedAdd(dir, e001)).toBeNull();
    const again = await retry(dir, stagedId);
    expect(again.status).toBe(200);
    expect(schemaErrors(ConnectorSpaceObject, again.body)).toEqual([]);
    expect(again.body).toMatchObject({
      csObjectId: stagedId,
      anchor: (await meshOf(dir)).get('E001')!.links[dir],
      dn: `uid=E001,ou=Engineering,${f.base}`,
      pendingExport: null,
      awaitingConfirmation: true,
      error: null,
    });
    expect((await retry(dir, e002Id)).body).toMatchObject({ dn: `uid=E002,ou=Sales,${f.base}`, pendingExport: null, error: null });
  });
});

/**
 * Deprovisioning follows the same rule: a leaver's delete that the directory refuses (an entry was put below
 * it) is counted on its row, retried, skipped at the maximum, and applied after a retry once the cause is gone.
 */
describeWithServer('slapd')('export retry of a deprovisioning delete (slapd, Azurite, over HTTP)', () => {
  let slapd: Slapd;
  let rt: ServiceUnderTest;
  let f: SlapdFixture;

  beforeAll(async () => {
    slapd = await startSlapd();
    rt = await startService({ env: { Export__MaxAttempts: '2' } });
    f = await new SlapdFixture(slapd).init();
  });
  afterAll(async () => {
    await rt?.dispose();
    await f?.cleanup();
    await closeParkedSearches();
    await slapd?.stop();
  });

  test('a refused delete is retried, skipped at the maximum, and applied after a retry', async () => {
    const hrDir = path.join(rt.dataDir, 'files', 'hr2');
    mkdirSync(hrDir, { recursive: true });
    const header = ['id', 'employeeId', 'givenName', 'sn', 'department'];
    const row = (n: number) => ({ id: `h${n}`, employeeId: `E00${n}`, givenName: `Given${n}`, sn: `Surname${n}`, department: 'Engineering' });
    writeCsv(hrDir, 'people.csv', header, [row(1), row(2), row(3)]);
    const res = await rt.call('POST', 'connectors', {
      body: {
        name: 'HR',
        type: 'custom',
        config: { implementation: 'file', objectType: 'User', settings: { path: hrDir, anchorColumn: 'id' }, deletionThreshold: { objects: 10, percent: 100 } },
      },
    });
    expect(res.status).toBe(201);
    const hr = res.body.id as string;
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'givenName', 'sn', 'department']);
    const dir = await ldapConnector(rt, 'Directory', { ...f.config(), deletionThreshold: { objects: 10, percent: 100 } });
    for (const [s, t] of [
      ['employeeId', 'uid'],
      ['givenName', 'givenName'],
      ['sn', 'sn'],
      ['sn', 'cn'],
      ['department', 'departmentNumber'],
    ]) {
      await rule(rt, { ruleType: 'FlowRule', connectorId: dir, direction: 'outbound', sourceAttribute: s, targetAttribute: t, confidence: 50 });
    }
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3 } });
    expect(await runExport(rt, dir)).toMatchObject({ status: 'Completed', stats: { objectsCreated: 3, errors: 0 } });
    const e003 = `uid=E003,ou=Engineering,${f.base}`;
    const anchor = (await meshOf(dir)).get('E003')!.links[dir];
    const id = anchoredCsObjectId(dir, anchor);
    const csRow = async () => (await readCsObjects(dir, [anchor])).get(anchor)!;

    // E003 leaves HR; the directory refuses its delete (an entry below it).
    const admin = await f.client();
    await admin.add(`cn=below,${e003}`, { objectClass: 'organizationalRole', cn: 'below' });
    writeCsv(hrDir, 'people.csv', header, [row(1), row(2)]);
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1 } });
    const run2 = await runExport(rt, dir);
    expect(run2).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsDeleted: 0, errors: 1 } });
    expect((await csRow()).exportError).toMatchObject({ attempts: 1, runId: run2.runId });
    expect((await csRow()).pendingExport).toMatchObject({ kind: 'delete' });
    const run3 = await runExport(rt, dir);
    expect(run3).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsDeleted: 0, errors: 1 } });
    expect((await csRow()).exportError).toMatchObject({ attempts: 2, runId: run3.runId });

    // At the maximum: not attempted, noted once.
    const run4 = await runExport(rt, dir);
    expect(run4).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, objectsDeleted: 0, errors: 0 } });
    expect(run4.errors).toEqual([skippedNote(1, 2)]);
    expect((await csRow()).exportError).toMatchObject({ attempts: 2, runId: run3.runId });

    // The cause goes; a retry; the next export deletes it.
    await admin.del(`cn=below,${e003}`);
    const r = await rt.call('POST', `connectors/${dir}/space/${id}/retry`, { role: 'Operator' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ csObjectId: id, anchor, dn: e003, pendingExport: { operation: 'Delete', attributeCount: 0 }, error: null });
    const run5 = await runExport(rt, dir);
    expect(run5).toMatchObject({ status: 'Completed', stats: { objectsDeleted: 1, errors: 0 } });
    const { searchEntries } = await admin.search(`ou=Engineering,${f.base}`, { scope: 'one', filter: '(uid=E003)' });
    expect(searchEntries).toHaveLength(0);
    // Gone from the connector space: its id answers 404 now.
    expect((await rt.call('POST', `connectors/${dir}/space/${id}/retry`, { role: 'Operator' })).status).toBe(404);
  });
});
