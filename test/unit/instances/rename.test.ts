import { randomUUID } from 'node:crypto';
import type { EngineConfig } from '../../../lib/instances/config';
import { listInstances, registerInstance, removeInstance, setPaused } from '../../../lib/instances/instances';
import { recoverRenames, recoveryAction, renameInstance, STALE_JOURNAL_MS } from '../../../lib/instances/rename';
import { getAssignment, insertAssignment } from '../../../lib/storage/assignments';
import {
  claimName,
  getInstance,
  getNameClaim,
  getPauseSettings,
  getRenameJournal,
  insertRenameJournal,
  listNameClaims,
  updateInstance,
} from '../../../lib/storage/instances';
import { completeRun, createRun, emptyStats, instanceNamesInRuns } from '../../../lib/storage/runs';
import { useTestStorage } from './storageEnv';

describe('recoveryAction', () => {
  const id = 'me';
  test.each([
    [{ instanceExists: true, holder: 'me', holderExists: true }, 'finish'],
    [{ instanceExists: true, holder: null, holderExists: false }, 'finish'],
    [{ instanceExists: true, holder: 'other', holderExists: true }, 'undo'],
    [{ instanceExists: true, holder: 'gone', holderExists: false }, 'finish'],
    [{ instanceExists: false, holder: 'me', holderExists: true }, 'undo'],
    [{ instanceExists: false, holder: null, holderExists: false }, 'undo'],
  ])('%o -> %s', (input, expected) => {
    expect(recoveryAction({ ...input, instanceId: id })).toBe(expected);
  });
});

const cfg = (name: string, id = randomUUID()): EngineConfig => ({
  instanceId: id,
  instanceName: name,
  heartbeatSeconds: 15,
  offlineAfterSeconds: 60,
  renamePauseMs: 0,
  heapGrowingPercent: 0,
  heapFloorMB: 0,
});
const uniq = () => randomUUID().slice(0, 8);

/** Every place an instance's name is stored, as a set of the names found (one entry when consistent). */
async function namesOf(instanceId: string, connectorIds: string[]): Promise<Set<string>> {
  const names = new Set<string>();
  names.add((await getInstance(instanceId))!.name);
  const pause = await getPauseSettings(instanceId);
  if (pause) names.add(pause.instanceName);
  for (const c of connectorIds) names.add((await getAssignment(c))!.instanceName);
  for (const n of await instanceNamesInRuns(instanceId)) names.add(n);
  return names;
}

async function seeded(name: string) {
  const c = cfg(name);
  await registerInstance(c);
  await setPaused(c.instanceId, true, 'admin@example.test');
  const connectorIds = [randomUUID(), randomUUID()];
  for (const connectorId of connectorIds) {
    await insertAssignment(connectorId, c.instanceId, name);
    const run = await createRun({ connectorId, instanceId: c.instanceId, instanceName: name, runType: 'DeltaImport', status: 'Running' });
    await completeRun(run.runId, { status: 'Completed', stats: emptyStats() });
  }
  return { id: c.instanceId, connectorIds };
}

describe('rename journal (Azurite)', () => {
  beforeAll(() => useTestStorage());

  test('a rename cascades to pause settings, assignments and runs, and moves the name claim', async () => {
    const oldName = `old-${uniq()}`;
    const newName = `new-${uniq()}`;
    const { id, connectorIds } = await seeded(oldName);
    expect(await namesOf(id, connectorIds)).toEqual(new Set([oldName]));
    const rec = await renameInstance(id, newName, 'api');
    expect(rec).toMatchObject({ name: newName, nameSource: 'api' });
    expect(await namesOf(id, connectorIds)).toEqual(new Set([newName]));
    expect(await getNameClaim(oldName)).toBeNull();
    expect((await getNameClaim(newName.toUpperCase()))?.instanceId).toBe(id);
    expect(await getRenameJournal(id)).toBeNull();
  });

  test('names are unique case-insensitively; two concurrent renames to one name: exactly one wins', async () => {
    const a = await seeded(`a-${uniq()}`);
    const b = await seeded(`b-${uniq()}`);
    const target = `Target-${uniq()}`;
    const results = await Promise.allSettled([renameInstance(a.id, target, 'api'), renameInstance(b.id, target.toLowerCase(), 'api')]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const loser = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!;
    expect(loser.reason).toMatchObject({ code: 'conflict' });
    const claims = (await listNameClaims()).filter((c) => c.name.toLowerCase() === target.toLowerCase());
    expect(claims).toHaveLength(1);
    // The loser kept its name everywhere and left no journal.
    const loserId = claims[0].instanceId === a.id ? b : a;
    expect((await namesOf(loserId.id, loserId.connectorIds)).size).toBe(1);
    expect(await getRenameJournal(loserId.id)).toBeNull();
    await expect(renameInstance(loserId.id, target.toUpperCase(), 'api')).rejects.toMatchObject({ code: 'conflict' });
  });

  test('a rename interrupted in the middle of the cascade is finished at recovery', async () => {
    const oldName = `mid-${uniq()}`;
    const newName = `done-${uniq()}`;
    const { id, connectorIds } = await seeded(oldName);
    // What a crash after step 3 began leaves: journal, claim, instance record renamed, the rest not.
    await insertRenameJournal({ instanceId: id, oldName, newName, nameSource: 'api', startedOn: new Date().toISOString() });
    expect(await claimName(newName, id)).toBe(true);
    await updateInstance(id, { name: newName });
    expect((await namesOf(id, connectorIds)).size).toBe(2);
    // Another instance's start leaves a fresh journal alone (its rename may be live)...
    expect(await recoverRenames('someone-else')).toEqual([]);
    // ...the renamed instance's own start, or anyone's once the journal is stale, finishes it.
    expect(await recoverRenames('someone-else', new Date(Date.now() + STALE_JOURNAL_MS))).toEqual([{ instanceId: id, action: 'finish' }]);
    expect(await namesOf(id, connectorIds)).toEqual(new Set([newName]));
    expect(await getNameClaim(oldName)).toBeNull();
    expect(await getRenameJournal(id)).toBeNull();
  });

  test('a rename interrupted before its claim is finished when the name is free, undone when it is taken', async () => {
    const free = await seeded(`f-${uniq()}`);
    const freeName = `free-${uniq()}`;
    await insertRenameJournal({
      instanceId: free.id,
      oldName: (await getInstance(free.id))!.name,
      newName: freeName,
      nameSource: 'api',
      startedOn: new Date().toISOString(),
    });
    expect(await recoverRenames(free.id)).toEqual([{ instanceId: free.id, action: 'finish' }]);
    expect(await namesOf(free.id, free.connectorIds)).toEqual(new Set([freeName]));

    const blocked = await seeded(`b-${uniq()}`);
    const holder = await seeded(`holder-${uniq()}`);
    const blockedName = (await getInstance(blocked.id))!.name;
    await insertRenameJournal({
      instanceId: blocked.id,
      oldName: blockedName,
      newName: (await getInstance(holder.id))!.name,
      nameSource: 'api',
      startedOn: new Date().toISOString(),
    });
    expect(await recoverRenames(blocked.id)).toEqual([{ instanceId: blocked.id, action: 'undo' }]);
    expect(await namesOf(blocked.id, blocked.connectorIds)).toEqual(new Set([blockedName]));
    expect(await getRenameJournal(blocked.id)).toBeNull();
  });

  test('a stale journal does not block a new rename; a fresh one is a 409', async () => {
    const x = await seeded(`x-${uniq()}`);
    const name = (await getInstance(x.id))!.name;
    await insertRenameJournal({
      instanceId: x.id,
      oldName: name,
      newName: `y-${uniq()}`,
      nameSource: 'api',
      startedOn: new Date(Date.now() - 2 * STALE_JOURNAL_MS).toISOString(),
    });
    const z = `z-${uniq()}`;
    await expect(renameInstance(x.id, z, 'api')).resolves.toMatchObject({ name: z });
    await insertRenameJournal({ instanceId: x.id, oldName: z, newName: `w-${uniq()}`, nameSource: 'api', startedOn: new Date().toISOString() });
    await expect(renameInstance(x.id, `v-${uniq()}`, 'api')).rejects.toMatchObject({ code: 'conflict' });
  });
});

describe('registration naming rule (Azurite)', () => {
  beforeAll(() => useTestStorage());

  test('configured name at first registration; a changed configured name renames; an API name survives restarts', async () => {
    const c = cfg(`cfg-${uniq()}`);
    expect((await registerInstance(c)).name).toBe(c.instanceName);
    const apiName = `api-${uniq()}`;
    await renameInstance(c.instanceId, apiName, 'api');
    expect((await registerInstance(c)).name).toBe(apiName);
    const changed = { ...c, instanceName: `cfg2-${uniq()}` };
    expect(await registerInstance(changed)).toMatchObject({ name: changed.instanceName, configuredName: changed.instanceName, nameSource: 'config' });
  });

  test('a configured name held by another instance gets the id suffix at first registration', async () => {
    const name = `dup-${uniq()}`;
    await registerInstance(cfg(name));
    const second = cfg(name);
    expect((await registerInstance(second)).name).toBe(`${name}-${second.instanceId.slice(0, 8)}`);
  });

  test('removal: 409 unless offline; then unassigns, drops pause settings and frees the name', async () => {
    const { id, connectorIds } = await seeded(`rm-${uniq()}`);
    const name = (await getInstance(id))!.name;
    await expect(removeInstance(id)).rejects.toMatchObject({ code: 'conflict' });
    await expect(removeInstance(id, new Date(Date.now() + 61_000))).resolves.toBeUndefined();
    expect(await getInstance(id)).toBeNull();
    for (const c of connectorIds) expect(await getAssignment(c)).toBeNull();
    expect(await getPauseSettings(id)).toBeNull();
    expect(await getNameClaim(name)).toBeNull();
    expect((await listInstances()).find((i) => i.id === id)).toBeUndefined();
    await expect(removeInstance(id)).rejects.toMatchObject({ code: 'not_found' });
  });
});
