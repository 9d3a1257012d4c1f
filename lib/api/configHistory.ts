import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { settlePending } from '../config/record';
import {
  connectorSnapshot,
  plainSnapshot,
  snapshotView,
  type ConnectorSnapshot,
  type RuleSnapshot,
  type ScheduleSnapshot,
  type Snapshot,
} from '../config/snapshots';
import { listVersionHeads, readVersion, type StoredVersion } from '../config/versions';
import { storageWriter, type PlannedWrite } from '../config/writer';
import { isConnectorType } from '../connectors/registry';
import { AppError, badRequest, conflict, notFound } from '../core/errors';
import { decryptSecret, setPath } from '../secrets';
import type { SecretEntry } from '../secrets/connectorSecrets';
import type { RuleRequest } from '../schemas/rules';
import type { ScheduleRequest } from '../schemas/schedules';
import { continuousChanged } from '../schedules/continuous';
import { schedulesChanged } from '../schedules/scheduler';
import { connectorExists, readConnectorRow } from '../storage/connectors';
import { getRule } from '../storage/rules';
import { getSchedule } from '../storage/schedules';
import { holdChange } from './configChanges';
import { checkConnectorLimit, guardRailReasons, prepareConnectorSave, preparedSnapshot, type HeldSave } from './connectors';
import { checkRuleAttributes } from './ruleAttributes';
import { ruleErrors, toRule } from './rules';
import { scheduleErrors } from './schedules';

/**
 * `GET /config/history` and `POST /config/history/{versionId}/restore`: the versions of connectors, rules and
 * schedules (lib/config), shown with secrets masked, and the restore of one, which saves the target as that
 * version left it (a delete's version: as it was before) through the same checks as an update, re-creating a
 * deleted target with its id. A restore is itself a version (`restore`) and audited.
 */
export interface ConfigVersionView {
  versionId: string;
  timestamp: string;
  actorUpn: string | null;
  targetType: StoredVersion['targetType'];
  targetId: string;
  action: StoredVersion['action'];
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

export function versionView(v: StoredVersion): ConfigVersionView {
  return {
    versionId: v.versionId,
    timestamp: v.timestamp,
    actorUpn: v.actorUpn,
    targetType: v.targetType,
    targetId: v.targetId,
    action: v.action,
    before: snapshotView(v.targetType, v.before),
    after: snapshotView(v.targetType, v.after),
  };
}

export async function listConfigHistory(q: {
  targetType?: string;
  targetId?: string;
  skip: number;
  take: number;
}): Promise<{ items: ConfigVersionView[]; totalCount: number }> {
  const heads = await settlePending(await listVersionHeads({ targetType: q.targetType, targetId: q.targetId?.toLowerCase() }));
  const page = heads.slice(q.skip, q.skip + q.take);
  const items = await Promise.all(page.map(async (h) => (await readVersion(h.versionId))!));
  return { items: items.filter(Boolean).map(versionView), totalCount: heads.length };
}

/** A committed version, or 404 (a pending one is settled first). */
async function committedVersion(versionId: string): Promise<StoredVersion> {
  let v = await readVersion(versionId);
  if (v?.state === 'pending') v = (await settlePending([v])).length ? await readVersion(versionId) : null;
  if (!v) throw notFound(`Configuration version '${versionId}' does not exist.`);
  return v;
}

/** The request a rule's snapshot was saved from. */
export function ruleRequestOf(r: RuleSnapshot & { etag?: string }): RuleRequest {
  const { ruleId: _id, createdOn: _c, updatedOn: _u, etag: _e, ...fields } = r;
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as RuleRequest;
}

/** The request a schedule's snapshot was saved from. */
export function scheduleRequestOf(s: ScheduleSnapshot): ScheduleRequest {
  return {
    name: s.name,
    cron: s.cron,
    timeZone: s.timeZone,
    isEnabled: s.isEnabled,
    steps: s.steps.map((x) => ({ runType: x.runType, connectorIds: [...x.connectorIds] })),
    stopOnFailure: s.stopOnFailure,
  };
}

/** A connector snapshot's configuration with its secrets opened (sealed for the connector's id). */
export function openedConfig(s: ConnectorSnapshot): Record<string, unknown> {
  let config = s.config;
  const secrets = s.sealedSecrets ? (JSON.parse(decryptSecret(s.sealedSecrets, s.id)) as SecretEntry[]) : [];
  for (const [path, value] of secrets) config = setPath(config, path, value);
  return config;
}

async function plannedRestore(v: StoredVersion, target: Snapshot, now: string): Promise<PlannedWrite> {
  const base = { targetType: v.targetType, targetId: v.targetId, action: 'restore' as const };
  if (v.targetType === 'connector') {
    const snap = target as ConnectorSnapshot;
    const row = await readConnectorRow(v.targetId);
    if (row && row.state !== 'ready') throw conflict(`The connector '${v.targetId}' is being deleted; retry when its cleanup has finished.`);
    if (!isConnectorType(snap.type)) throw conflict(`Connectors of type '${snap.type}' cannot be saved on this service.`);
    const prepared = await prepareConnectorSave(snap.type, openedConfig(snap), row ?? undefined);
    if (!row) await checkConnectorLimit();
    const after = preparedSnapshot(v.targetId, snap.name, snap.type, prepared, row?.createdOn ?? snap.createdOn, now);
    return { ...base, before: row ? connectorSnapshot(row) : null, after };
  }
  if (v.targetType === 'rule') {
    const snap = target as RuleSnapshot;
    const current = await getRule(v.targetId);
    const request = ruleRequestOf(snap);
    const errors = await ruleErrors(request, connectorExists);
    const gone = errors.some((e) => e.path === '/connectorId');
    if (errors.length)
      throw badRequest(
        gone
          ? `The rule names a connector that does not exist (${request.connectorId}); restore the connector first.`
          : 'The rule is not valid. See errors for each field.',
        errors,
      );
    const body = await checkRuleAttributes(request);
    return { ...base, before: current ? plainSnapshot(current) : null, after: toRule(v.targetId, body, current?.createdOn ?? snap.createdOn, now) };
  }
  const snap = target as ScheduleSnapshot;
  const current = await getSchedule(v.targetId);
  const { errors, fields } = await scheduleErrors(scheduleRequestOf(snap), connectorExists);
  if (errors.length) throw badRequest('The schedule is not valid. See errors for each field.', errors);
  return {
    ...base,
    before: current ? plainSnapshot(current) : null,
    after: { scheduleId: v.targetId, ...fields, createdOn: current?.createdOn ?? snap.createdOn, updatedOn: now },
  };
}

/**
 * Restore a version: 200 with the restore's own version. A target that cannot be saved as it was then (a rule
 * of a connector deleted since, a name taken since) is a 400 or 409 saying why, and nothing changes.
 */
export async function restoreVersion(versionId: string, caller: Caller): Promise<ConfigVersionView | HeldSave> {
  const v = await committedVersion(versionId);
  const target = v.action === 'delete' ? v.before : v.after;
  if (!target) throw conflict('This version left nothing to restore.');
  let write: PlannedWrite;
  try {
    write = await plannedRestore(v, target, new Date().toISOString());
  } catch (err) {
    if (err instanceof AppError && (err.code === 'validation_failed' || err.code === 'conflict')) {
      throw new AppError(err.code, `The ${v.targetType} cannot be restored as this version left it, nothing was changed: ${err.detail}`, err.extra);
    }
    throw err;
  }
  if (write.targetType === 'connector' && write.before) {
    // A restore that loosens a guard rail waits for a second Admin, as the same update would.
    const { reasons, requireSecondPerson } = guardRailReasons(
      (write.before as ConnectorSnapshot | null)?.config ?? null,
      (write.after as ConnectorSnapshot).config,
    );
    if (reasons.length)
      return {
        held: await holdChange({ targetType: 'connector', targetId: v.targetId, action: 'restore', reasons, writes: [write], requireSecondPerson }, caller),
      };
  }
  const applied = await storageWriter.apply(write, caller);
  await recordAudit(caller, 'restore', v.targetType, v.targetId);
  if (v.targetType === 'schedule') schedulesChanged();
  if (v.targetType === 'connector') continuousChanged();
  return versionView((await readVersion(applied.versionId))!);
}
