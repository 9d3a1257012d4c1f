import { AppError } from '../../../lib/core/errors';
import type { Caller } from '../../../lib/auth/permissions';
import { bearerPrincipal } from '../../../lib/core/principal';
import { applyPlan, approveRun, expireIfDue, isTriggeringCaller, parkRun, rejectRun } from '../../../lib/runs/approval';
import { completeRun, createRun, emptyStats, getRun } from '../../../lib/storage/runs';
import { randomUUID } from 'node:crypto';
import { useTestStorage } from '../instances/storageEnv';
import { cancelRun } from '../../../lib/runs/runs';

const admin = (sid: string | null, upn: string | null): Caller => ({
  scheme: 'Bearer',
  name: upn ?? 'x',
  upn,
  sid,
  roles: ['Admin'],
  principal: bearerPrincipal({ ...(upn ? { upn } : { appid: 'app-x' }), ...(sid ? { oid: sid } : {}) }),
});
const raised: { runId: string; approved: boolean }[] = [];
const raise = async (runId: string, d: { approved: boolean }) => void raised.push({ runId, approved: d.approved });

async function parked(hoursAgo = 0) {
  const run = await createRun({
    connectorId: randomUUID(),
    instanceId: null,
    runType: 'FullImport',
    status: 'Running',
    trigger: { type: 'manual', actorUpn: 'alice@x' },
    actorId: 'oid-alice',
  });
  await parkRun(run.runId, [{ operation: 'deletes', count: 9, limit: 2 }], emptyStats(), new Date(Date.now() - hoursAgo * 3_600_000));
  return run.runId;
}

const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof AppError ? e.code : String(e)),
  );

describe('approvals (storage-backed)', () => {
  beforeAll(() => useTestStorage());

  test('parking records the reasons, who asked, and an expiry 24 hours on', async () => {
    const id = await parked();
    const run = (await getRun(id))!;
    expect(run).toMatchObject({ status: 'AwaitingApproval', approval: { reasons: [{ operation: 'deletes', count: 9, limit: 2 }], requestedBy: 'alice@x' } });
    expect(Math.round((Date.parse(run.approval!.expiresOn) - Date.now()) / 3_600_000)).toBe(24);
  });

  test('the four-eyes rule compares principals: any shared alias (oid or UPN) is the same person; a tick of nobody is nobody', () => {
    // A run recorded before principals were: rebuilt from its UPN and stable id.
    const run = { actorId: 'oid-alice', trigger: { type: 'manual' as const, actorUpn: 'alice@x' } };
    expect(isTriggeringCaller(run, admin('OID-ALICE', 'other@x'))).toBe(true);
    expect(isTriggeringCaller(run, admin('oid-bob', 'alice@x'))).toBe(true);
    expect(isTriggeringCaller(run, admin('oid-bob', 'bob@x'))).toBe(false);
    expect(isTriggeringCaller({ trigger: run.trigger }, admin(null, 'ALICE@x'))).toBe(true);
    expect(isTriggeringCaller({ trigger: { type: 'schedule', actorUpn: 'schedule:nightly' } }, admin(null, 'schedule:nightly'))).toBe(false);
  });

  test("approve: the trigger's person is refused (403); another Admin sets it Running and wakes the orchestration", async () => {
    const id = await parked();
    expect(await code(approveRun(id, admin('oid-alice', 'alice@x'), raise))).toBe('forbidden');
    const ok = await approveRun(id, admin('oid-bob', 'bob@x'), raise);
    expect(ok).toMatchObject({ status: 'Running', approvedBy: 'bob@x' });
    expect(raised).toContainEqual({ runId: id, approved: true });
    // Not awaiting any more: 409 for both.
    expect(await code(approveRun(id, admin('oid-carol', 'carol@x'), raise))).toBe('conflict');
    expect(await code(rejectRun(id, admin('oid-carol', 'carol@x'), raise))).toBe('conflict');
  });

  test('an approval that expired ends the run Rejected, saying so; approving it then is a 409', async () => {
    const id = await parked(25);
    const run = await expireIfDue((await getRun(id))!);
    expect(run.status).toBe('Rejected');
    expect(run.error).toMatch(/^The approval expired on .* without a decision: nothing was applied \(9 deletes \(limit 2\)\)\.$/);
    expect(await code(approveRun(id, admin('oid-bob', 'bob@x'), raise))).toBe('conflict');
    // A run not yet expired is left as it is.
    const fresh = await parked(1);
    expect((await expireIfDue((await getRun(fresh))!)).status).toBe('AwaitingApproval');
  });

  test('apply: an expired plan, a plan not completed and a run that is not a dry run are 409', async () => {
    const start = async () => undefined;
    const caller = admin('oid-bob', 'bob@x');
    const dry = await createRun({ connectorId: randomUUID(), instanceId: null, runType: 'FullImport', status: 'Running', dryRun: true });
    expect(await code(applyPlan(dry.runId, caller, start))).toBe('conflict');
    await completeRun(dry.runId, { status: 'Completed', stats: emptyStats(), plan: { expiresOn: new Date(Date.now() - 1000).toISOString() } });
    await expect(applyPlan(dry.runId, caller, start)).rejects.toThrow(/The plan expired on/);
    const real = await createRun({ connectorId: randomUUID(), instanceId: null, runType: 'FullImport', status: 'Running' });
    await completeRun(real.runId, { status: 'Completed', stats: emptyStats() });
    await expect(applyPlan(real.runId, caller, start)).rejects.toThrow(/not a dry run/);
  });

  test('a cancel ends a waiting run Cancelled at once, nothing applied; the lock is released', async () => {
    const id = await parked();
    const ended = await cancelRun(id, admin('oid-op', 'op@x'));
    expect(ended).toMatchObject({ status: 'Cancelled', error: 'The run was cancelled by op@x while it waited for approval: nothing of its plan was applied.' });
    expect(await code(cancelRun(id, admin('oid-op', 'op@x')))).toBe('conflict');
  });
});
