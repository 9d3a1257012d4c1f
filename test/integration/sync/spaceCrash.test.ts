import { CS_PARTITIONS, csObjectIdOf, readCsPartition } from '../../../lib/sync/space/connectorSpace';
import { startService } from '../../support/service';
import { fileConnector, folder, rule, waitRun, writeCsv } from './syncSupport';

/**
 * kill -9 of the service in the middle of a full import, a restart, the run finishes: every state list of
 * the connector space explorer equals a full scan of the connector-space rows (the states live on the rows,
 * written in the batches that change them; the explorer's index is derived from them and follows the run).
 */
jest.setTimeout(900_000);

const N = 6_000;
const HEADER = ['id', 'employeeId', 'givenName', 'sn'];
const rows = Array.from({ length: N }, (_, i) => ({ id: `u${String(i).padStart(5, '0')}`, employeeId: `E${i}`, givenName: `G${i}`, sn: `S${i}` }));
const STATES = ['joined', 'disconnector', 'pendingExport', 'awaitingConfirmation', 'error'] as const;

test('after a kill -9 mid-import and a restart, every state list equals a full scan of the rows', async () => {
  const rt = await startService();
  try {
    const dir = folder();
    writeCsv(dir, 'users.csv', HEADER, rows);
    const c = await fileConnector(rt, 'Users', dir);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'employeeId' });
    for (const a of ['givenName', 'sn']) await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: a, targetAttribute: a, confidence: 50 });
    const res = await rt.call('POST', `connectors/${c}/import`, { body: { runType: 'FullImport' } });
    expect(res.status).toBe(202);
    const runId = res.body.runId as string;
    for (;;) {
      const r = await rt.call('GET', `runs/${runId}`);
      if (r.body.status === 'Running' && r.body.stats.objectsProcessed >= 1000) break;
      expect(['Queued', 'Running']).toContain(r.body.status);
      await new Promise((s) => setTimeout(s, 50));
    }
    // The explorer is read mid-run (its index loads part of the space), then the process dies.
    const mid = await rt.call('GET', `connectors/${c}/space?take=1`);
    expect(mid.status).toBe(200);
    expect(mid.body.totalCount).toBeLessThan(N);
    await rt.kill();
    await rt.start();
    const during = await rt.call('GET', `connectors/${c}/space?state=joined&take=1`);
    expect(during.status).toBe(200);
    const run = await waitRun(rt, runId, 600_000);
    expect(run.status).toBe('Completed');

    // The full scan, here, of every row.
    const scan = new Map<string, string[]>(STATES.map((s) => [s, []]));
    for (let p = 0; p < CS_PARTITIONS; p++) {
      for (const o of await readCsPartition(c, p)) {
        if (o.deleted) continue;
        const id = csObjectIdOf(c, o);
        scan.get(o.meshId ? 'joined' : 'disconnector')!.push(id);
        if (o.pendingExport) scan.get('pendingExport')!.push(id);
        if (o.exported && Object.keys(o.exported).length) scan.get('awaitingConfirmation')!.push(id);
        if (o.exportError) scan.get('error')!.push(id);
      }
    }
    expect(scan.get('joined')).toHaveLength(N);
    for (const state of STATES) {
      const listed: string[] = [];
      for (let skip = 0; ; skip += 200) {
        const page = await rt.call('GET', `connectors/${c}/space?state=${state}&take=200&skip=${skip}`);
        expect(page.status).toBe(200);
        expect(page.body.totalCount).toBe(scan.get(state)!.length);
        listed.push(...page.body.items.map((i: { csObjectId: string }) => i.csObjectId));
        if (page.body.items.length < 200) break;
      }
      expect(listed.sort()).toEqual(scan.get(state)!.sort());
    }
    const all = await rt.call('GET', `connectors/${c}/space?take=3`);
    expect(all.body.items.map((i: { anchor: string }) => i.anchor)).toEqual(['u00000', 'u00001', 'u00002']);
  } finally {
    await rt.dispose();
  }
});
