import { SettingsReader } from '../core/config';
import { areaLog } from '../core/log';
import { displayAttributes, displayNameOf } from '../mesh/displayName';
import type { MeshObject } from '../mesh/model';
import { listConnectorRecords, readConnectorRow, type StoredConnector } from '../storage/connectors';
import {
  getOpenLeavers,
  leaverKey,
  listOpenLeavers,
  moveLeaversToDone,
  openLeaversOf,
  putOpenLeavers,
  removeOpenLeavers,
  type LeaverOperation,
  type LeaverRecord,
} from '../storage/leavers';
import { listRules, type Rule } from '../storage/rules';
import { leaverSeconds } from '../telemetry/metrics';
import { deprovisioningSettings, dueAt, showsDisableValues, type DeprovisioningSettings } from './deprovisioning';
import type { CsObject } from './model';
import { readCsObjects } from './space/connectorSpace';

/**
 * The leaver clock: for every deprovisioning (a delete or a disable) of a mesh object in a target connector, when
 * the engine saw the leave (the import run that deleted the mesh object, or the grace's end), when the target's
 * export sent the change, and when an import of the target confirmed it. Times are kept per leaver (table
 * `Leavers`, lib/storage/leavers.ts); a leaver past its deadline (`deprovisioning.deadlineMinutes` of the target,
 * counted from when it was seen or from the end of its grace) and not confirmed is late. See docs/leavers.md.
 */

const log = areaLog('leavers');

export type LeaverState = 'pending' | 'late' | 'done';

export const DEFAULT_DEADLINE_MINUTES = 60;

/** A target's deadline in minutes (`config.deprovisioning.deadlineMinutes`, validated 1..10080), else the default. */
export function deadlineMinutesOf(config: Record<string, unknown>): number {
  const d = config.deprovisioning as { deadlineMinutes?: unknown } | undefined;
  return typeof d?.deadlineMinutes === 'number' && Number.isInteger(d.deadlineMinutes) && d.deadlineMinutes > 0 ? d.deadlineMinutes : DEFAULT_DEADLINE_MINUTES;
}

/** When the clock starts: the end of the grace when there is one, else when the leave was seen. */
export const clockStart = (r: Pick<LeaverRecord, 'seenOn' | 'dueOn'>): string => (r.dueOn && r.dueOn > r.seenOn ? r.dueOn : r.seenOn);

/**
 * How long one of `deadlineMinutes`' minutes lasts, in ms: 60,000, unless the test-only setting
 * `Leavers:TestHooks:DeadlineMinuteSeconds` (1 to 60, honoured only when AZURE_FUNCTIONS_ENVIRONMENT is
 * Development) shortens it, so that an integration test sees a leaver turn late within seconds. Read once.
 */
export function deadlineMinuteMs(settings = new SettingsReader()): number {
  const isDevelopment = settings.isDevelopment();
  return (isDevelopment ? settings.int('Leavers:TestHooks:DeadlineMinuteSeconds', 60, { min: 1, max: 60 }) : 60) * 1000;
}

let minuteMs: number | undefined;

export const deadlineOf = (seenOn: string, dueOn: string | null, minutes: number): string =>
  new Date(Date.parse(clockStart({ seenOn, dueOn })) + minutes * (minuteMs ??= deadlineMinuteMs())).toISOString();

/** A leaver's state at `now`: confirmed is done; past its deadline and not confirmed is late (whether or not it was sent). */
export function leaverState(r: Pick<LeaverRecord, 'confirmedOn' | 'deadlineOn'>, now: Date): LeaverState {
  if (r.confirmedOn) return 'done';
  return Date.parse(r.deadlineOn) < now.getTime() ? 'late' : 'pending';
}

/** A target that deprovisions (exports, and its action is not `none`) with its settings. */
export interface LeaverTarget {
  connector: Pick<StoredConnector, 'id' | 'name'>;
  settings: DeprovisioningSettings;
  deadlineMinutes: number;
}

/** The targets whose deprovisioning the clock follows: connectors with outbound flow rules and an action. */
export function leaverTargets(connectors: readonly StoredConnector[], rules: readonly Rule[]): Map<string, LeaverTarget> {
  const exporting = new Set(rules.filter((r) => r.ruleType === 'FlowRule' && r.direction === 'outbound' && r.connectorId).map((r) => r.connectorId!));
  const out = new Map<string, LeaverTarget>();
  for (const c of connectors) {
    if (!exporting.has(c.id)) continue;
    const settings = deprovisioningSettings(c.config, c.type);
    if (settings.action === 'none') continue;
    out.set(c.id, { connector: { id: c.id, name: c.name }, settings, deadlineMinutes: deadlineMinutesOf(c.config) });
  }
  return out;
}

function displayName(o: MeshObject): string {
  const lower = new Map(Object.keys(o.attributes).map((k) => [k.toLowerCase(), k]));
  return displayNameOf(displayAttributes(), o, (name) => {
    const key = name in o.attributes ? name : lower.get(name.toLowerCase());
    return key === undefined ? undefined : o.attributes[key].value;
  });
}

/**
 * The leavers a run's deletion of mesh objects starts (pure): one per deleted object and target that holds it
 * (its links other than the deleting connector, among the deprovisioning targets).
 */
export function leaversSeen(
  deleted: readonly MeshObject[],
  targets: ReadonlyMap<string, LeaverTarget>,
  by: { connectorId: string; runId: string },
  at: Date,
): LeaverRecord[] {
  const seenOn = at.toISOString();
  const out: LeaverRecord[] = [];
  for (const o of deleted) {
    for (const [connectorId, anchor] of Object.entries(o.links)) {
      const t = targets.get(connectorId);
      if (!t || connectorId === by.connectorId) continue;
      const dueOn = t.settings.graceDays > 0 ? dueAt(at, t.settings.graceDays) : null;
      out.push({
        meshObjectId: o.id,
        connectorId,
        anchor,
        displayName: displayName(o),
        objectType: o.objectType,
        sourceConnectorId: by.connectorId,
        operation: t.settings.action === 'disable' ? 'disable' : 'delete',
        reason: 'gone',
        seenOn,
        seenRunId: by.runId,
        dueOn,
        deadlineOn: deadlineOf(seenOn, dueOn, t.deadlineMinutes),
        sentOn: null,
        sentRunId: null,
        confirmedOn: null,
        confirmedRunId: null,
      });
    }
  }
  return out;
}

/** An import or sync page deleted these mesh objects (their last states): their leavers start. */
export async function recordLeaversSeen(
  by: { connectorId: string; runId: string },
  rules: readonly Rule[],
  deleted: readonly (MeshObject | undefined)[],
): Promise<void> {
  const docs = deleted.filter((d): d is MeshObject => !!d && Object.keys(d.links).some((c) => c !== by.connectorId));
  if (!docs.length) return;
  const targets = leaverTargets(await listConnectorRecords(), rules);
  await putOpenLeavers(leaversSeen(docs, targets, by, new Date()));
}

/** One applied page of an import or sync: the objects it deleted start leavers, those back from a tombstone cancel theirs. */
export async function leaverClockPage(
  by: { connectorId: string; runId: string },
  rules: readonly Rule[] | undefined,
  deletes: readonly { last?: MeshObject }[],
  revived: ReadonlyMap<string, unknown>,
): Promise<void> {
  if (deletes.length)
    await recordLeaversSeen(
      by,
      rules ?? (await listRules()),
      deletes.map((d) => d.last),
    );
  if (revived.size) await cancelLeavers([...revived.keys()]);
}

/** A mesh object back (a rehire, a restore): its open leavers are cancelled (removed). */
export async function cancelLeavers(meshObjectIds: readonly string[]): Promise<void> {
  if (!meshObjectIds.length) return;
  await removeOpenLeavers(await openLeaversOf(meshObjectIds));
}

/** A deprovisioning an export sent (its target accepted it). */
export interface SentLeaver {
  meshObjectId: string;
  anchor: string;
  operation: LeaverOperation;
  reason: 'gone' | 'condition';
  /** When the leave happened, for a leaver no import saw (a provisioning condition stopped holding). */
  seenOn: string;
  dueOn?: string | null;
  displayName?: string;
  objectType: string;
}

/**
 * An export of `connectorId` sent these deprovisionings: their leavers get `sentOn` (a leaver no import recorded,
 * such as a provisioning condition that stopped holding, starts now, seen when its mesh object last changed).
 * Re-enables (`cleared`: the condition holds again) cancel the open leaver of that object.
 */
export async function recordLeaversSent(
  run: { connectorId: string; runId: string; dryRun?: boolean },
  sent: readonly SentLeaver[],
  cleared: readonly string[] = [],
): Promise<void> {
  if (run.dryRun || (!sent.length && !cleared.length)) return;
  // What the target did is done: a storage failure here is logged, not the export's (the import confirms them anyway).
  await sendLeavers(run, sent, cleared).catch((err: unknown) =>
    log.warn(`The leaver clock could not record what export run ${run.runId} sent (${(err as Error)?.name ?? 'Error'}).`),
  );
}

async function sendLeavers(run: { connectorId: string; runId: string }, sent: readonly SentLeaver[], cleared: readonly string[]): Promise<void> {
  if (cleared.length) await removeOpenLeavers(cleared.map((id) => ({ connectorId: run.connectorId, meshObjectId: id })));
  if (!sent.length) return;
  const now = new Date().toISOString();
  const open = await getOpenLeavers(sent.map((s) => ({ connectorId: run.connectorId, meshObjectId: s.meshObjectId })));
  const connector = await readConnectorRow(run.connectorId);
  const minutes = deadlineMinutesOf(connector?.config ?? {});
  const rows = sent.map((s): LeaverRecord => {
    const known = open.get(leaverKey(run.connectorId, s.meshObjectId));
    if (known) return { ...known, operation: s.operation, sentOn: known.sentOn ?? now, sentRunId: known.sentRunId ?? run.runId };
    const dueOn = s.dueOn ?? null;
    return {
      meshObjectId: s.meshObjectId,
      connectorId: run.connectorId,
      anchor: s.anchor,
      displayName: s.displayName ?? s.anchor,
      objectType: s.objectType,
      sourceConnectorId: null,
      operation: s.operation,
      reason: s.reason,
      seenOn: s.seenOn,
      seenRunId: null,
      dueOn,
      deadlineOn: deadlineOf(s.seenOn, dueOn, minutes),
      sentOn: now,
      sentRunId: run.runId,
      confirmedOn: null,
      confirmedRunId: null,
    };
  });
  await putOpenLeavers(rows);
}

/** The deprovisionings an export page sent for objects whose provisioning condition stopped holding (tags `delete`, `disable`), and the re-enables (`clear`). */
export async function recordPageLeavers(
  run: { connectorId: string; runId: string; dryRun?: boolean },
  changes: readonly { tag?: string; doc: MeshObject; prev?: CsObject; change: { anchor?: string; objectType: string } }[],
  results: readonly { status: string }[],
): Promise<void> {
  const sent: SentLeaver[] = [];
  const cleared: string[] = [];
  results.forEach((r, i) => {
    const c = changes[i];
    if (r.status !== 'success' || !c.tag) return;
    if (c.tag === 'clear') cleared.push(c.doc.id);
    else if (c.tag === 'delete' || c.tag === 'disable')
      sent.push({
        meshObjectId: c.doc.id,
        anchor: c.change.anchor ?? c.prev?.anchor ?? '',
        operation: c.tag,
        reason: 'condition',
        // The mesh object's last change: the run that made the condition stop holding.
        seenOn: c.doc.updatedOn,
        dueOn: c.prev?.deprovisioned?.due ?? null,
        displayName: displayName(c.doc),
        objectType: c.doc.objectType,
      });
  });
  await recordLeaversSent(run, sent, cleared);
}

/** The deprovisionings the export's deletes pass sent for objects whose mesh object is gone. */
export async function recordGoneLeavers(
  run: { connectorId: string; runId: string; dryRun?: boolean },
  rows: readonly { row: CsObject; operation: LeaverOperation }[],
  results: readonly { status: string }[],
  now: string,
): Promise<void> {
  const sent: SentLeaver[] = [];
  results.forEach((r, i) => {
    const { row, operation } = rows[i];
    if (r.status !== 'success' || !row.meshId) return;
    sent.push({
      meshObjectId: row.meshId,
      anchor: row.anchor,
      operation,
      reason: row.deprovisioned?.reason === 'condition' ? 'condition' : 'gone',
      seenOn: row.deprovisioned?.at ?? now,
      dueOn: row.deprovisioned?.due ?? null,
      objectType: row.objectType,
    });
  });
  await recordLeaversSent(run, sent);
}

/**
 * Whether an import of the target shows the leaver's change (pure): a delete, the object gone from the
 * connector space (or kept only as deleted); a disable, the object there with the disable values (a
 * pseudo-attribute such as AD's accountDisabled is never imported: the export's success confirms it).
 */
export function confirmedBy(r: LeaverRecord, row: CsObject | undefined, settings: DeprovisioningSettings): boolean {
  if (r.operation === 'delete') return !row || !!row.deleted;
  if (!row || row.deleted) return false;
  return showsDisableValues(row.attributes, settings);
}

/**
 * Whether a leaver whose send was not recorded is shown done (pure): its object is in the connector space,
 * marked by the export that deprovisioned it (deleted; or disabled, with the disable values shown), so a
 * target object merely still there (an import that ran before the export sent anything) confirms nothing.
 */
export function markedDone(r: LeaverRecord, row: CsObject | undefined, settings: DeprovisioningSettings): boolean {
  if (!row) return false;
  if (r.operation === 'delete') return !!row.deleted;
  return !row.deleted && row.deprovisioned?.state === 'disabled' && confirmedBy(r, row, settings);
}

/**
 * An import of `connectorId` that started at `startedOn` completed: the leavers sent to it before that are
 * confirmed when what it read shows them (see {@link confirmedBy}); each is moved to done and observed in
 * `meshsync_leaver_seconds`.
 */
export async function confirmLeavers(run: { connectorId: string; runId: string }, startedOn: string): Promise<number> {
  // Sent before the import started; or, when the send was not recorded (a storage hiccup then), seen before it.
  const open = (await listOpenLeavers(run.connectorId)).filter((r) => (r.sentOn ?? r.seenOn) <= startedOn);
  if (!open.length) return 0;
  const connector = await readConnectorRow(run.connectorId);
  if (!connector) return 0;
  const settings = deprovisioningSettings(connector.config, connector.type);
  const rows = await readCsObjects(
    run.connectorId,
    open.map((r) => r.anchor),
  );
  const now = new Date().toISOString();
  // A leaver whose send was not recorded is confirmed only by its object there, marked done by an export (never
  // by its absence, nor by values an import never shows: an unsent disable of AD's accountDisabled would look done).
  const done = open
    .filter((r) => (r.sentOn ? confirmedBy(r, rows.get(r.anchor), settings) : markedDone(r, rows.get(r.anchor), settings)))
    .map((r) => ({ ...r, confirmedOn: now, confirmedRunId: run.runId }));
  await moveLeaversToDone(done);
  for (const r of done) leaverSeconds.observe({ target: connector.name }, Math.max(0, (Date.parse(now) - Date.parse(clockStart(r))) / 1000));
  return done.length;
}

/** {@link confirmLeavers} after a completed import; a storage failure is logged, not the run's: the next import confirms them. */
export async function confirmLeaversAfter(run: { connectorId: string; runId: string }, startedOn: string): Promise<void> {
  await confirmLeavers(run, startedOn).catch((err: unknown) =>
    log.warn(`The leaver clock could not confirm leavers of connector ${run.connectorId} (${(err as Error)?.name ?? 'Error'}); the next import tries again.`),
  );
}

/** Late leavers now, by target connector id (the gauge). */
export async function lateLeaverCounts(now = new Date()): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const r of await listOpenLeavers()) if (leaverState(r, now) === 'late') out.set(r.connectorId, (out.get(r.connectorId) ?? 0) + 1);
  return out;
}
