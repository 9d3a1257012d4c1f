import { randomUUID } from 'node:crypto';
import type { Caller } from '../auth/permissions';
import { canonicalJsonOf } from '../config/canonical';
import { connectorSnapshot, fieldChanges, plainSnapshot, type FieldChange, type Snapshot, type TargetType } from '../config/snapshots';
import { applyAll, storageWriter, type ConfigWriter, type PlannedWrite } from '../config/writer';
import { isConnectorType } from '../connectors/registry';
import { AppError, badRequest, type FieldError } from '../core/errors';
import type { ConfigDocument } from '../schemas/config';
import type { RuleRequest } from '../schemas/rules';
import { connectorConfigWithSecrets, unsealSecrets } from '../secrets/connectorSecrets';
import { setPath } from '../secrets';
import { listConnectorRecords, type StoredConnector } from '../storage/connectors';
import { listRules, type StoredRule } from '../storage/rules';
import { findActiveRun } from '../storage/runs';
import { activeScheduleRun, listSchedules, type StoredSchedule } from '../storage/schedules';
import { exceeded, thresholdsOf } from '../plans/thresholds';
import { requiresSecondPerson } from '../plans/guardRails';
import { readPlanSettings } from '../plans/settings';
import { connectorDeleteImpact } from '../sync/run/cleanup';
import { holdChange, type ChangeReason, type ConfigChangeView } from './configChanges';
import { afterConfigWrites } from './configApplied';
import { checkConnectorLimit, guardRailReasons, prepareConnectorSave, preparedSnapshot } from './connectors';
import { checkRuleAttributesOf } from './ruleAttributes';
import { ruleErrors, toRule } from './rules';
import { scheduleErrors } from './schedules';

/**
 * `POST /config/import`: the configuration document (`GET /config/export`) made the service's configuration,
 * all or nothing.
 *
 * 1. Match: each item by id, else by name (case-insensitive) among the stored ones not matched yet; a rule's
 *    or schedule's connector ids that name a document connector matched by name are read as that connector.
 * 2. Validate everything before writing anything: each connector as its create or update (schema, secrets, the
 *    live test on save when it changes; a secret as `********` keeps the stored one, and a new connector with
 *    only the placeholder is a 400 naming it), each rule against the connectors the import leaves (its
 *    directory's attribute names included), each schedule, names unique, the license. Every error is listed
 *    under its place in the document; one error and nothing is written.
 * 3. Apply (unless `dryRun`): creates and updates (connectors, rules, schedules), then what `prune` deletes
 *    (rules, schedules, connectors), each with its version. When a write fails, the writes made are undone in
 *    reverse order (and their versions removed), so the configuration is as it was. Only then is the data of
 *    deleted connectors and schedules cleaned up (it cannot be undone), and every change audited.
 */
export type ImportAction = 'create' | 'update' | 'delete' | 'unchanged';
export interface ImportChange {
  targetType: TargetType;
  targetId: string;
  name: string;
  action: ImportAction;
  /** Why this change waits for a second Admin (it loosens a guard rail, or prunes a connector over its threshold). */
  needsApproval?: ChangeReason[];
  /** An update: what changes, field by field (secrets as `********`). */
  fields?: FieldChange[];
}

interface Planned {
  change: ImportChange;
  write?: PlannedWrite;
}

const lower = (s: string) => s.toLowerCase();
const prefixed = (prefix: string, errors: FieldError[] | undefined): FieldError[] => (errors ?? []).map((e) => ({ ...e, path: prefix + e.path }));

/** Match `items` to `stored` by id, then by name; index -> stored item (or undefined: new). */
function match<S, D>(
  items: D[],
  stored: S[],
  ids: { doc: (d: D) => string | undefined; stored: (s: S) => string },
  names: { doc: (d: D) => string; stored: (s: S) => string },
): (S | undefined)[] {
  const taken = new Set<S>();
  const byId = new Map(stored.map((s) => [lower(ids.stored(s)), s]));
  const out: (S | undefined)[] = items.map((d) => {
    const id = ids.doc(d);
    const s = id ? byId.get(lower(id)) : undefined;
    if (s) taken.add(s);
    return s;
  });
  items.forEach((d, i) => {
    if (out[i] || (ids.doc(d) && byId.has(lower(ids.doc(d)!)))) return;
    const s = stored.find((x) => !taken.has(x) && lower(names.stored(x)) === lower(names.doc(d)));
    if (s) {
      taken.add(s);
      out[i] = s;
    }
  });
  return out;
}

/** Names the import leaves must be unique (case-insensitive): an error for each document item that repeats one. */
function nameErrors(kind: string, names: string[], kept: string[]): FieldError[] {
  const seen = new Set(kept.map(lower));
  const errors: FieldError[] = [];
  names.forEach((n, i) => {
    if (seen.has(lower(n)))
      errors.push({
        path: `/${kind}/${i}/name`,
        message: `'${n}' is the name of another ${kind.slice(0, -1)} the import leaves (names are unique, case-insensitive)`,
      });
    seen.add(lower(n));
  });
  return errors;
}

export interface ImportOptions {
  dryRun: boolean;
  prune: boolean;
  writer?: ConfigWriter;
  log?: (message: string) => void;
}

export async function importConfig(
  doc: ConfigDocument,
  caller: Caller,
  opts: ImportOptions,
): Promise<{ changes: ImportChange[]; applied: boolean; held?: ConfigChangeView }> {
  const now = new Date().toISOString();
  const errors: FieldError[] = duplicateIdErrors(doc);
  const plan: Planned[] = [];
  const deletes: Planned[] = [];
  const [connectors, rules, schedules] = [await listConnectorRecords(), await listRules(), await listSchedules()];
  let secondPerson = false;

  // Connectors.
  const cMatch = match(doc.connectors, connectors, { doc: (d) => d.id, stored: (s) => s.id }, { doc: (d) => d.name, stored: (s) => s.name });
  const connectorIds = new Map<string, string>();
  const finalConnectors = new Map<string, { type: string; config: () => Promise<Record<string, unknown>> }>();
  doc.connectors.forEach((d, i) => {
    const targetId = cMatch[i]?.id ?? lower(d.id ?? randomUUID());
    if (d.id) connectorIds.set(lower(d.id), targetId);
  });
  const keptConnectors = opts.prune ? [] : connectors.filter((c) => !cMatch.includes(c));
  errors.push(
    ...nameErrors(
      'connectors',
      doc.connectors.map((d) => d.name),
      keptConnectors.map((c) => c.name),
    ),
  );
  for (const c of keptConnectors) finalConnectors.set(c.id, { type: c.type, config: async () => (await connectorConfigWithSecrets(c.id)).config });
  let creates = 0;
  for (const [i, d] of doc.connectors.entries()) {
    const current: StoredConnector | undefined = cMatch[i];
    const targetId = current?.id ?? connectorIds.get(lower(d.id ?? '')) ?? randomUUID();
    const at = `/connectors/${i}`;
    if (current && current.type !== d.type) {
      errors.push({ path: `${at}/type`, message: `must be '${current.type}' (the type of the connector it matches cannot change)` });
      continue;
    }
    if (!isConnectorType(d.type)) continue;
    try {
      const prepared = await prepareConnectorSave(d.type, d.config, current);
      // The secrets whose value changes: a field change shown masked (the values are never shown).
      const previous = current ? unsealSecrets(current) : [];
      const newSecrets = prepared.secrets
        .filter(([path, value]) => previous.find(([p]) => p.join('/') === path.join('/'))?.[1] !== value)
        .map(([path]) => path);
      const unchanged = !!current && prepared.unchanged && current.name === d.name;
      const after = preparedSnapshot(targetId, d.name, d.type, prepared, current?.createdOn ?? now, now);
      if (!current) creates++;
      let full = prepared.config;
      for (const [path, value] of prepared.secrets) full = setPath(full, path, value);
      finalConnectors.set(targetId, { type: d.type, config: async () => full });
      const change: ImportChange = { targetType: 'connector', targetId, name: d.name, action: unchanged ? 'unchanged' : current ? 'update' : 'create' };
      if (!unchanged && current) change.fields = fieldChanges('connector', connectorSnapshot(current), after, newSecrets);
      if (!unchanged && current) {
        const { reasons, requireSecondPerson } = guardRailReasons(current.config, prepared.config);
        if (reasons.length) {
          change.needsApproval = reasons.map((r) => ({ ...r, connectorId: targetId, connectorName: d.name }));
          secondPerson ||= requireSecondPerson;
        }
      }
      plan.push({
        change,
        ...(unchanged
          ? {}
          : {
              write: {
                targetType: 'connector',
                targetId,
                action: change.action as 'create' | 'update',
                before: current ? connectorSnapshot(current) : null,
                after,
              },
            }),
      });
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'validation_failed') throw err;
      errors.push(...(err.extra.errors?.length ? prefixed(at, err.extra.errors) : [{ path: at, message: err.detail }]));
    }
  }
  const removedConnectors = opts.prune ? connectors.filter((c) => !cMatch.includes(c)) : [];
  if (creates > removedConnectors.length) await checkConnectorLimit(creates - removedConnectors.length);
  const connectorId = (id: string) => connectorIds.get(lower(id)) ?? lower(id);
  const exists = async (id: string) => finalConnectors.has(lower(id));

  // Rules.
  const rMatch = match(doc.rules, rules, { doc: (d) => d.ruleId, stored: (s) => s.ruleId }, { doc: (d) => d.ruleName, stored: (s) => s.ruleName });
  for (const [i, d] of doc.rules.entries()) {
    const current: StoredRule | undefined = rMatch[i];
    const { ruleId: docId, ...fields } = d;
    const request: RuleRequest = { ...fields, ...(fields.connectorId ? { connectorId: connectorId(fields.connectorId) } : {}) };
    const at = `/rules/${i}`;
    if (current && current.ruleType !== request.ruleType) {
      errors.push({ path: `${at}/ruleType`, message: `must be '${current.ruleType}' (the type of the rule it matches cannot change)` });
      continue;
    }
    const found = await ruleErrors(request, exists);
    if (found.length) {
      errors.push(...prefixed(at, found));
      continue;
    }
    let body = request;
    const connector = request.connectorId ? finalConnectors.get(request.connectorId) : undefined;
    try {
      if (connector) body = await checkRuleAttributesOf(request, { type: connector.type, config: await connector.config() });
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'validation_failed') throw err;
      errors.push(...prefixed(at, err.extra.errors));
      continue;
    }
    const targetId = current?.ruleId ?? lower(docId ?? randomUUID());
    const after = toRule(targetId, body, current?.createdOn ?? now, now);
    const unchanged = !!current && sameFields(plainSnapshot(current), after, ['createdOn', 'updatedOn']);
    const change: ImportChange = { targetType: 'rule', targetId, name: d.ruleName, action: unchanged ? 'unchanged' : current ? 'update' : 'create' };
    if (!unchanged && current) change.fields = fieldChanges('rule', plainSnapshot(current), after);
    plan.push({
      change,
      ...(unchanged
        ? {}
        : { write: { targetType: 'rule', targetId, action: change.action as 'create' | 'update', before: current ? plainSnapshot(current) : null, after } }),
    });
  }

  // Schedules.
  const sMatch = match(doc.schedules, schedules, { doc: (d) => d.scheduleId, stored: (s) => s.scheduleId }, { doc: (d) => d.name, stored: (s) => s.name });
  const keptSchedules = opts.prune ? [] : schedules.filter((s) => !sMatch.includes(s));
  errors.push(
    ...nameErrors(
      'schedules',
      doc.schedules.map((d) => d.name),
      keptSchedules.map((s) => s.name),
    ),
  );
  for (const [i, d] of doc.schedules.entries()) {
    const current: StoredSchedule | undefined = sMatch[i];
    const { scheduleId: docId, ...request } = d;
    const mapped = { ...request, steps: request.steps.map((s) => ({ ...s, connectorIds: s.connectorIds.map(connectorId) })) };
    const { errors: found, fields } = await scheduleErrors(mapped, exists);
    if (found.length) {
      errors.push(...prefixed(`/schedules/${i}`, found));
      continue;
    }
    const targetId = current?.scheduleId ?? lower(docId ?? randomUUID());
    const after = { scheduleId: targetId, ...fields, createdOn: current?.createdOn ?? now, updatedOn: now };
    const unchanged = !!current && sameFields(plainSnapshot(current), after, ['createdOn', 'updatedOn']);
    const change: ImportChange = { targetType: 'schedule', targetId, name: d.name, action: unchanged ? 'unchanged' : current ? 'update' : 'create' };
    if (!unchanged && current) change.fields = fieldChanges('schedule', plainSnapshot(current), after);
    plan.push({
      change,
      ...(unchanged
        ? {}
        : {
            write: { targetType: 'schedule', targetId, action: change.action as 'create' | 'update', before: current ? plainSnapshot(current) : null, after },
          }),
    });
  }

  // What prune deletes: rules, then schedules, then connectors (a connector's rules go before it).
  if (opts.prune) {
    const del = (targetType: TargetType, targetId: string, name: string, before: Snapshot): Planned => ({
      change: { targetType, targetId, name, action: 'delete' },
      write: { targetType, targetId, action: 'delete', before, after: null },
    });
    for (const r of rules.filter((x) => !rMatch.includes(x))) deletes.push(del('rule', r.ruleId, r.ruleName, plainSnapshot(r)));
    for (const s of schedules.filter((x) => !sMatch.includes(x))) {
      if (await activeScheduleRun(s.scheduleId))
        errors.push({
          path: '/schedules',
          message: `the schedule '${s.name}' that prune would delete has a Running schedule run; cancel it or wait for it to end`,
        });
      deletes.push(del('schedule', s.scheduleId, s.name, plainSnapshot(s)));
    }
    for (const c of removedConnectors) {
      if (await findActiveRun(c.id))
        errors.push({ path: '/connectors', message: `the connector '${c.name}' that prune would delete has a run Running or Queued; wait for it to finish` });
      const planned = del('connector', c.id, c.name, connectorSnapshot(c));
      // A pruned connector's mesh deletes pass its deletes threshold, as a forced delete's do.
      const impact = await connectorDeleteImpact(c.id);
      const over = exceeded({ deletes: thresholdsOf(c.config).deletes }, { deletes: impact.tombstones }, impact.connectorSpaceObjects);
      if (over.length) {
        planned.change.needsApproval = over.map((r) => ({ ...r, connectorId: c.id, connectorName: c.name }));
        secondPerson ||= requiresSecondPerson(c.config, readPlanSettings().requireSecondPerson);
      }
      deletes.push(planned);
    }
  }

  if (errors.length) {
    const shown = errors
      .slice(0, 5)
      .map((e) => `${e.path} ${e.message}`)
      .join('; ');
    throw badRequest(
      `The configuration document cannot be imported, nothing was changed: ${shown}${errors.length > 5 ? ` (and ${errors.length - 5} more)` : ''}.`,
      errors,
    );
  }
  const changes = [...plan, ...deletes].map((p) => p.change);
  if (opts.dryRun) return { changes, applied: false };

  const writes = [...plan, ...deletes].flatMap((p) => (p.write ? [p.write] : []));
  const reasons = changes.flatMap((c) => c.needsApproval ?? []);
  if (reasons.length) {
    // All or nothing: the whole import waits for a second Admin, and is applied as one on approval.
    const held = await holdChange({ targetType: 'config', targetId: 'import', action: 'import', reasons, writes, requireSecondPerson: secondPerson }, caller);
    return { changes, applied: false, held };
  }
  const log = opts.log ?? (() => undefined);
  let applied;
  try {
    applied = await applyAll(opts.writer ?? storageWriter, writes, caller, (w, err) =>
      log(`Undo of the import's change of ${w.targetType} ${w.targetId} failed (${(err as Error).name}).`),
    );
  } catch (err) {
    if (err instanceof AppError) throw new AppError(err.code, `The import failed and was undone, nothing was changed: ${err.detail}`, err.extra);
    throw err;
  }
  await afterConfigWrites(applied, caller, log);
  return { changes, applied: true };
}

function sameFields(a: object, b: object, ignore: string[]): boolean {
  const strip = (o: object) => Object.fromEntries(Object.entries(o).filter(([k]) => !ignore.includes(k)));
  return canonicalJsonOf(strip(a)) === canonicalJsonOf(strip(b));
}

/** A connector, rule or schedule id named twice in the document is a 400 (the document is ambiguous). */
export function duplicateIdErrors(doc: ConfigDocument): FieldError[] {
  const errors: FieldError[] = [];
  const check = (kind: string, ids: (string | undefined)[], field: string) => {
    const seen = new Set<string>();
    ids.forEach((id, i) => {
      if (!id) return;
      if (seen.has(lower(id))) errors.push({ path: `/${kind}/${i}/${field}`, message: 'names the same item as an earlier one of the document' });
      seen.add(lower(id));
    });
  };
  check(
    'connectors',
    doc.connectors.map((c) => c.id),
    'id',
  );
  check(
    'rules',
    doc.rules.map((r) => r.ruleId),
    'ruleId',
  );
  check(
    'schedules',
    doc.schedules.map((s) => s.scheduleId),
    'scheduleId',
  );
  return errors;
}
