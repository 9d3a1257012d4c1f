import type { LeaverView } from '../../../lib/api/leavers';
import { LEAVER_TARGET_KINDS, startLeaverTarget, type LeaverTarget } from '../../support/leaverTargets';
import { SAMBA_START_TIMEOUT_MS } from '../../support/samba';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest, SECOND_ADMIN } from '../../support/service';
import { waitFor } from '../ldap/e2eSupport';
import { folder, LEAVER_HR, leaverHrSource, leaverRow, rule, runExport, runImport, writeCsv } from './syncSupport';

/**
 * Leavers in continuous delta mode against the four kinds of target at once (real servers: OpenLDAP slapd and
 * 389 DS deleting, a Samba AD DC disabling through userAccountControl, PostgreSQL disabling by a status column;
 * test/support/leaverTargets.ts), the HR file source and every target followed by the engine: 200 people
 * provisioned by the engine, then 10 removed from the HR file. Checked from outside the engine (each server
 * read with its own client) that every leaver is deleted or disabled in every target and nobody else is, and
 * that GET /leavers lists each leaver `done` in each target, confirmed by that target's own continuous delta.
 * No timing is asserted: bench/leavers/leavers.js measures it.
 */
jest.setTimeout(900_000);

const PEOPLE = 200;
const LEAVERS = 10;
const HR = LEAVER_HR;
const row = leaverRow;
const emp = (i: number) => leaverRow(i).employeeId;
const all = (['slapd', 'ds389', 'samba', 'postgres'] as const).every((s) => serverAvailable(s));

(all ? describe : describe.skip)('leavers in continuous mode: slapd, 389 DS, Samba AD and PostgreSQL targets', () => {
  let rt: ServiceUnderTest;
  const targets: LeaverTarget[] = [];
  const ids: string[] = [];
  const hrDir = folder('ims-leavers-targets-hr-');
  let hr = '';

  async function continuous(id: string): Promise<void> {
    const current = await rt.call('GET', `connectors/${id}`);
    const res = await rt.call('PUT', `connectors/${id}`, {
      body: { name: current.body.name, config: { ...current.body.config, continuous: { enabled: true, intervalSeconds: 2, reconcileMinutes: 60 } } },
    });
    if (res.status === 202) expect((await rt.call('POST', `config/changes/${res.body.changeId}/approve`, { as: SECOND_ADMIN })).status).toBe(200);
    else expect(res.status).toBe(200);
  }
  const doneIn = async (connectorId: string): Promise<LeaverView[]> => {
    const res = await rt.call('GET', `leavers?state=done&connectorId=${connectorId}&take=200`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body.items;
  };

  beforeAll(async () => {
    // The four servers and the service start side by side; afterAll stops whichever of them started.
    const [service, ...started] = await Promise.allSettled([
      startService(),
      ...LEAVER_TARGET_KINDS.map((kind) => startLeaverTarget(kind, { deadlineMinutes: 30 })),
    ]);
    for (const s of started) if (s.status === 'fulfilled') targets.push(s.value);
    if (service.status === 'fulfilled') rt = service.value;
    for (const s of [service, ...started]) if (s.status === 'rejected') throw s.reason;
    hr = await leaverHrSource(rt, hrDir, PEOPLE, 1000);
    for (const t of targets) {
      const created = await rt.call('POST', 'connectors', { body: t.connector });
      expect(created.status).toBe(201);
      ids.push(created.body.id);
      for (const r of t.rules) await rule(rt, { ...r, connectorId: created.body.id });
    }
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: PEOPLE, errors: 0 } });
    for (const id of ids) {
      const exported = await runExport(rt, id);
      expect(exported.errors ?? []).toEqual([]);
      expect(exported).toMatchObject({ status: 'Completed', stats: { objectsCreated: PEOPLE, errors: 0 } });
      expect(await runImport(rt, id)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: PEOPLE, errors: 0 } });
    }
    for (const t of targets) expect({ kind: t.kind, accounts: await t.activeAccounts() }).toEqual({ kind: t.kind, accounts: PEOPLE });
    for (const id of [hr, ...ids]) await continuous(id);
  }, SAMBA_START_TIMEOUT_MS + 600_000);
  afterAll(async () => {
    await rt?.dispose();
    for (const t of targets) await t.stop();
  });

  test('10 people removed from HR: deleted or disabled in each target (read from outside), each leaver done in each target', async () => {
    const leavers = Array.from({ length: LEAVERS }, (_, k) => 2 * (k + 1) * 9);
    const stay = Array.from({ length: PEOPLE }, (_, i) => i + 1).filter((i) => !leavers.includes(i));
    // A few at a time, as HR files arrive: three writes of the HR file.
    for (const upTo of [3, 7, LEAVERS]) {
      const gone = new Set(leavers.slice(0, upTo));
      writeCsv(
        hrDir,
        'hr.csv',
        HR,
        Array.from({ length: PEOPLE }, (_, i) => i + 1)
          .filter((i) => !gone.has(i))
          .map(row),
      );
      await new Promise((r) => setTimeout(r, 3000));
    }
    const leaverIds = leavers.map(emp);
    for (const t of targets)
      await waitFor(`the ${LEAVERS} leavers deprovisioned in ${t.kind}`, async () => (await t.deprovisioned(leaverIds)).size === LEAVERS, 300_000);
    for (const [k, t] of targets.entries()) {
      await waitFor(`the ${LEAVERS} leavers done in ${t.kind}`, async () => (await doneIn(ids[k])).length === LEAVERS, 300_000);
      const done = await doneIn(ids[k]);
      expect(done.map((l) => l.displayName).sort()).toEqual(leavers.map((i) => `Given${i} Sn${i}`).sort());
      for (const l of done)
        expect(l).toMatchObject({ state: 'done', reason: 'gone', operation: t.action, connectorId: ids[k], sourceConnectorId: hr, late: false });
      // Nobody else was touched: everyone who stays is still there and enabled.
      expect({ kind: t.kind, deprovisioned: [...(await t.deprovisioned(stay.map(emp)))] }).toEqual({ kind: t.kind, deprovisioned: [] });
      expect({ kind: t.kind, accounts: await t.activeAccounts() }).toEqual({ kind: t.kind, accounts: PEOPLE - LEAVERS });
    }
    // Each target's confirmation came from a continuous run of that target, not from anyone pressing a button.
    for (const [k, t] of targets.entries()) {
      const runs = (await rt.call('GET', `runs?connectorId=${ids[k]}&take=100`, { role: 'Viewer' })).body.items as {
        runId: string;
        runType: string;
        trigger: { type: string };
      }[];
      const confirming = new Set((await doneIn(ids[k])).map((l) => l.confirmedRunId));
      const byId = new Map(runs.map((r) => [r.runId, r]));
      for (const runId of confirming)
        expect({ kind: t.kind, run: byId.get(runId!) }).toMatchObject({ kind: t.kind, run: { runType: 'DeltaImport', trigger: { type: 'continuous' } } });
    }
  });
});
