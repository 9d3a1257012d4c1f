import type { LeaverView } from '../../../lib/api/leavers';
import { startLeaverTarget, type LeaverTarget } from '../../support/leaverTargets';
import { SAMBA_START_TIMEOUT_MS } from '../../support/samba';
import { serverAvailable } from '../../support/servers';
import { startService, type ServiceUnderTest } from '../../support/service';
import { folder, LEAVER_HR, leaverHrSource, leaverRow, rule, runExport, runImport, writeCsv } from './syncSupport';

/**
 * One leaver, one row per target, against a real Samba AD DC (leavers disabled through userAccountControl,
 * whose `accountDisabled` an import never shows). An import of the AD target that runs after HR saw the leave
 * but before the AD export sent the disable (a busy target's own delta, woken by its change stream) must not
 * confirm it: the account is still enabled. Before, it did (a `done` row with no `sentOn`), and the export's
 * send then opened a second leaver for the same person, confirmed by the next import: two rows for one leaver.
 */
jest.setTimeout(600_000);

const PEOPLE = 12;
const LEAVERS = [3, 8, 11];
const HR = LEAVER_HR;
const row = leaverRow;
const emp = (i: number) => leaverRow(i).employeeId;

(serverAvailable('samba') ? describe : describe.skip)('leavers against a Samba AD DC: one row per leaver', () => {
  let rt: ServiceUnderTest;
  let ad: LeaverTarget;
  let hr = '';
  let target = '';
  const hrDir = folder('ims-leavers-samba-hr-');

  const leavers = async (state?: string): Promise<LeaverView[]> => {
    const res = await rt.call('GET', `leavers?connectorId=${target}&take=200${state ? `&state=${state}` : ''}`, { role: 'Viewer' });
    expect(res.status).toBe(200);
    return res.body.items;
  };

  beforeAll(async () => {
    ad = await startLeaverTarget('samba', { deadlineMinutes: 30 });
    rt = await startService();
    hr = await leaverHrSource(rt, hrDir, PEOPLE, 100);
    const created = await rt.call('POST', 'connectors', { body: ad.connector });
    expect(created.status).toBe(201);
    target = created.body.id;
    for (const r of ad.rules) await rule(rt, { ...r, connectorId: target });
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed', stats: { objectsCreated: PEOPLE, errors: 0 } });
    expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsCreated: PEOPLE, errors: 0 } });
    expect(await runImport(rt, target)).toMatchObject({ status: 'Completed', stats: { objectsProcessed: PEOPLE, errors: 0 } });
    expect(await ad.activeAccounts()).toBe(PEOPLE);
  }, SAMBA_START_TIMEOUT_MS + 300_000);
  afterAll(async () => {
    await rt?.dispose();
    await ad?.stop();
  });

  test('an AD import before the disable was sent confirms nothing; after the export and an import, one done row per leaver, with sentOn', async () => {
    writeCsv(
      hrDir,
      'hr.csv',
      HR,
      Array.from({ length: PEOPLE }, (_, i) => i + 1)
        .filter((i) => !LEAVERS.includes(i))
        .map(row),
    );
    expect(await runImport(rt, hr, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed', stats: { objectsDeleted: LEAVERS.length } });
    expect((await leavers('pending')).length).toBe(LEAVERS.length);

    // The AD target's own import, before its export: the accounts are still enabled (read from outside too).
    expect(await runImport(rt, target, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed' });
    expect((await ad.deprovisioned(LEAVERS.map(emp))).size).toBe(0);
    expect((await leavers('done')).length).toBe(0);
    expect((await leavers('pending')).length).toBe(LEAVERS.length);

    // The export disables them; the next import confirms each once.
    expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect((await ad.deprovisioned(LEAVERS.map(emp))).size).toBe(LEAVERS.length);
    expect(await runImport(rt, target, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed' });
    const all = await leavers();
    expect(all.length).toBe(LEAVERS.length);
    expect(all.map((l) => l.displayName).sort()).toEqual(LEAVERS.map((i) => `Given${i} Sn${i}`).sort());
    for (const l of all) {
      expect(l).toMatchObject({ state: 'done', reason: 'gone', operation: 'disable', sourceConnectorId: hr });
      expect(l.sentOn).not.toBeNull();
      expect(Date.parse(l.confirmedOn!)).toBeGreaterThanOrEqual(Date.parse(l.sentOn!));
    }
    // One more import and one more export change nothing in the clock.
    expect(await runExport(rt, target)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
    expect(await runImport(rt, target, { runType: 'DeltaImport' })).toMatchObject({ status: 'Completed' });
    expect((await leavers()).length).toBe(LEAVERS.length);
  });
});
