import { AppError, conflict, notFound } from '../core/errors';
import { listAssignments, setAssignmentInstanceName } from '../storage/assignments';
import {
  claimName,
  deleteRenameJournal,
  getInstance,
  getNameClaim,
  getRenameJournal,
  insertRenameJournal,
  listRenameJournals,
  releaseName,
  setPauseInstanceName,
  takeOverName,
  updateInstance,
  type InstanceRecord,
  type NameSource,
  type RenameJournal,
} from '../storage/instances';
import { renameInstanceInRuns } from '../storage/runs';
import { readEngineConfig } from './config';

/**
 * Instance rename, crash-safe.
 *
 * The name is denormalized in four places besides the instance record: the name index (uniqueness), the
 * pause settings, the connector assignments and the run history. A rename:
 * 1. writes the journal row `rename/<instanceId>` `{ oldName, newName }` (one rename per instance at a time);
 * 2. claims the new name in the name index (atomic insert: of two renames to one name exactly one wins);
 *    a name held by another instance ends the rename: journal deleted, 409;
 * 3. applies the name everywhere (instance record, pause settings, assignments, runs), each step idempotent;
 * 4. releases the old name and deletes the journal.
 * Nothing outside the journal changes before the claim succeeds, so a rename that stops before step 3 is
 * undone by deleting its journal; one that stops in step 3 or 4 is finished by running steps 3-4 again.
 * `recoverRenames()` (a start step, and the rename API when it meets a stale journal) does exactly that, so
 * after recovery every place carries one name, never a mix.
 */

/** A journal older than this belongs to a rename whose process died (a live cascade takes milliseconds). */
export const STALE_JOURNAL_MS = 30_000;

export type RecoveryAction = 'finish' | 'undo';

/**
 * What to do with a journal found after a crash, from who holds the new name now.
 * - held by the renamed instance (or by nobody, in which case it is claimed first): finish;
 * - held by another instance that exists: the claim was never ours, nothing was applied: undo;
 * - held by an instance that no longer exists (an interrupted removal): take the claim over and finish;
 * - the renamed instance no longer exists: undo (release the claim, drop the journal).
 */
export function recoveryAction(input: { instanceExists: boolean; holder: string | null; holderExists: boolean; instanceId: string }): RecoveryAction {
  if (!input.instanceExists) return 'undo';
  if (input.holder === null || input.holder === input.instanceId) return 'finish';
  return input.holderExists ? 'undo' : 'finish';
}

/** Claim `name` for the instance, taking it over from an instance that no longer exists. */
export async function claimNameFor(name: string, instanceId: string): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await claimName(name, instanceId)) return true;
    const holder = await getNameClaim(name);
    if (!holder) continue;
    if (holder.instanceId === instanceId) return true;
    if (await getInstance(holder.instanceId)) return false;
    if (await takeOverName(holder, instanceId, name)) return true;
  }
  return false;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Steps 3 and 4: apply the journal's new name everywhere, release the old one, drop the journal. Idempotent. */
async function applyRename(j: RenameJournal, options: { testPause?: boolean } = {}): Promise<void> {
  const applied = await updateInstance(j.instanceId, { name: j.newName, nameSource: j.nameSource });
  if (!applied) {
    await undoRename(j);
    return;
  }
  const pauseMs = options.testPause ? readEngineConfig().renamePauseMs : 0;
  if (pauseMs > 0) await sleep(pauseMs);
  await setPauseInstanceName(j.instanceId, j.newName);
  for (const a of await listAssignments(j.instanceId)) await setAssignmentInstanceName(a.connectorId, j.instanceId, j.newName);
  await renameInstanceInRuns(j.instanceId, j.newName);
  if (j.oldName.toLowerCase() !== j.newName.toLowerCase()) await releaseName(j.oldName, j.instanceId);
  await deleteRenameJournal(j);
}

async function undoRename(j: RenameJournal): Promise<void> {
  if (j.oldName.toLowerCase() !== j.newName.toLowerCase()) await releaseName(j.newName, j.instanceId);
  await deleteRenameJournal(j);
}

/** Finish or undo one interrupted rename (see `recoveryAction`). */
export async function recoverRename(j: RenameJournal): Promise<RecoveryAction> {
  const instance = await getInstance(j.instanceId);
  const holder = await getNameClaim(j.newName);
  const holderExists = holder ? holder.instanceId === j.instanceId || (await getInstance(holder.instanceId)) !== null : false;
  let action = recoveryAction({ instanceExists: instance !== null, holder: holder?.instanceId ?? null, holderExists, instanceId: j.instanceId });
  if (action === 'finish' && !(await claimNameFor(j.newName, j.instanceId))) action = 'undo';
  if (action === 'finish') await applyRename(j);
  else await deleteRenameJournal(j);
  return action;
}

/**
 * Recover interrupted renames: those of `ownInstanceId` always (this process is starting, so no rename of
 * it runs here), others' once their journal is stale. Returns what was done, for the log.
 */
export async function recoverRenames(ownInstanceId?: string, now = new Date()): Promise<Array<{ instanceId: string; action: RecoveryAction }>> {
  const done: Array<{ instanceId: string; action: RecoveryAction }> = [];
  for (const j of await listRenameJournals()) {
    const stale = now.getTime() - Date.parse(j.startedOn) >= STALE_JOURNAL_MS;
    if (j.instanceId !== ownInstanceId && !stale) continue;
    done.push({ instanceId: j.instanceId, action: await recoverRename(j) });
  }
  return done;
}

/**
 * Rename an instance (steps 1-4 above). Renaming to the current name is a no-op; a change of case only is a
 * rename. 404 when the instance does not exist; 409 when another instance has the name (case-insensitive)
 * or another rename of this instance is in progress.
 */
export async function renameInstance(instanceId: string, newName: string, nameSource: NameSource): Promise<InstanceRecord> {
  const instance = await getInstance(instanceId);
  if (!instance) throw notFound('The engine instance does not exist.');
  if (instance.name === newName) {
    if (instance.nameSource !== nameSource && nameSource === 'api') await updateInstance(instanceId, { nameSource });
    return (await getInstance(instanceId)) ?? instance;
  }
  const journal = { instanceId, oldName: instance.name, newName, nameSource, startedOn: new Date().toISOString() };
  if (!(await insertRenameJournal(journal))) {
    const existing = await getRenameJournal(instanceId);
    if (existing && Date.now() - Date.parse(existing.startedOn) < STALE_JOURNAL_MS) {
      throw conflict('Another rename of this engine instance is in progress.');
    }
    if (existing) await recoverRename(existing);
    return renameInstance(instanceId, newName, nameSource);
  }
  const j = await getRenameJournal(instanceId);
  if (!j) throw new AppError('conflict', 'Another rename of this engine instance is in progress.');
  // A rename that completed between our read and our journal: start again from the current name.
  const current = await getInstance(instanceId);
  if (!current || current.name !== j.oldName) {
    await deleteRenameJournal(j);
    return renameInstance(instanceId, newName, nameSource);
  }
  if (!(await claimNameFor(newName, instanceId))) {
    await deleteRenameJournal(j);
    throw conflict(`The name '${newName}' is already taken by another engine instance.`);
  }
  await applyRename(j, { testPause: true });
  const renamed = await getInstance(instanceId);
  if (!renamed) throw notFound('The engine instance does not exist.');
  return renamed;
}
