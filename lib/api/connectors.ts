import { fullSyncRequired } from '../sync/rulesChange';
import { finishConnectorDelete } from './connectorDelete';
import { randomUUID } from 'node:crypto';
import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { connectorTypeConfig, isConnectorType, testConnectorOnSave, type ConnectorType } from '../connectors/registry';
import { canonicalJson, isConnectorError, redactSecrets } from '../connectors/sdk';
import { assignmentOf } from '../instances/assignments';
import { badRequest, conflict, type FieldError, AppError } from '../core/errors';
import { deprovisioningChecks } from '../sync/deprovisioning';
import { schemaErrors } from '../core/validation/ajv';
import { releaseStaleRunLock, type RunOrchestrations } from '../runs/runs';
import type { Connector, CreateConnectorRequest, UpdateConnectorRequest } from '../schemas/connectors';
import { SECRET_PLACEHOLDER, changedPaths, deletePath, getPath, pointer, secretPaths, setPath, type FieldPath } from '../secrets';
import { getConnectorRecord, listConnectorRecords, listConnectorRows, readConnectorRow, type StoredConnector } from '../storage/connectors';
import { connectorSnapshot, plainSnapshot, type ConnectorSnapshot } from '../config/snapshots';
import { storageWriter, type PlannedWrite } from '../config/writer';
import { loosenedGuardRails, requiresSecondPerson, type GuardRailReason } from '../plans/guardRails';
import { readPlanSettings } from '../plans/settings';
import { exceeded, thresholdsOf } from '../plans/thresholds';
import { continuousChanged } from '../schedules/continuous';
import { schedulesChanged } from '../schedules/scheduler';
import { listSchedules } from '../storage/schedules';
import { connectorDeleteImpact } from '../sync/run/cleanup';
import { holdChange, type ConfigChangeView } from './configChanges';
import { findActiveRun } from '../storage/runs';
import { configExpressionErrors } from './expressions';
import { readLicense } from './license';
import { sealSecrets, unsealSecrets, type SecretEntry } from '../secrets/connectorSecrets';

/**
 * Connectors as the Admin API sees them: validation of `config` by the type's schema, secrets sealed at rest
 * and masked on the way out, unique names, audit of every write, and deletion as a resumable operation.
 */

/** The API view: secrets masked, the assignment from the engine. */
export async function connectorView(c: StoredConnector): Promise<Connector> {
  let config = c.config;
  for (const path of c.secretPaths) config = setPath(config, path, SECRET_PLACEHOLDER);
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    status: c.status,
    lastSync: c.lastSync,
    config,
    instanceId: await assignmentOf(c.id),
    fullSyncRequired: await fullSyncRequired(c.id),
    createdOn: c.createdOn,
    updatedOn: c.updatedOn,
  };
}

export async function getConnector(id: string): Promise<Connector> {
  return connectorView(await getConnectorRecord(id));
}

export async function listConnectors(): Promise<{
  connectors: Pick<Connector, 'id' | 'name' | 'type' | 'status' | 'lastSync' | 'updatedOn'>[];
  total: number;
}> {
  const rows = await listConnectorRecords();
  rows.sort((a, b) => cmp(a.name.toLowerCase(), b.name.toLowerCase()) || cmp(a.id, b.id));
  return {
    connectors: rows.map((c) => ({ id: c.id, name: c.name, type: c.type, status: c.status, lastSync: c.lastSync, updatedOn: c.updatedOn })),
    total: rows.length,
  };
}

/**
 * Every error of `config` for `type`, without I/O: its type's schema (defaults applied in place), the type's
 * cross-field checks (on a config the schema accepts: they read typed fields) and its expressions (each one
 * whose field the schema accepts), all under `/config`.
 */
export function configErrors(type: ConnectorType, config: Record<string, unknown>): FieldError[] {
  const def = connectorTypeConfig(type);
  const errors = schemaErrors(def.configSchema, config, '/config');
  if (!errors.length) errors.push(...[...def.checks(config), ...deprovisioningChecks(type, config)].map((e) => ({ ...e, path: '/config' + e.path })));
  const scripts = def.expressions.filter((field) => !errors.some((e) => e.path === `/config/${field}`));
  errors.push(...configExpressionErrors(config, scripts));
  return errors;
}

/**
 * The `config` errors of a create request that failed its schema (any shape), when its `type` is known, so that
 * the 400 lists them with the top-level ones (readJson `innerErrors`).
 */
export function createRequestInnerErrors(body: unknown): FieldError[] {
  const { type, config } = (isObject(body) ? body : {}) as { type?: unknown; config?: unknown };
  return typeof type === 'string' && isConnectorType(type) && isObject(config) ? configErrors(type, config) : [];
}

/** As createRequestInnerErrors for an update, whose type is the stored connector's. */
export async function updateRequestInnerErrors(id: string, body: unknown): Promise<FieldError[]> {
  const config = isObject(body) ? body.config : undefined;
  if (!isObject(config)) return [];
  const current = await readConnectorRow(id);
  return current?.state === 'ready' && isConnectorType(current.type) ? configErrors(current.type, config) : [];
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

interface PreparedConfig {
  config: Record<string, unknown>;
  secrets: SecretEntry[];
}

/** What is stored of a connector, for a PUT: its public config and its unsealed secrets. */
interface StoredConfig {
  config: Record<string, unknown>;
  secrets: SecretEntry[];
}

/**
 * Validate `config` for `type` and split it into the stored public part and the secrets. A secret sent as
 * the placeholder takes the value stored in `previous` (400 when there is none), unless the PUT changes where
 * or as whom the connector connects (the type's `endpoints`): then every secret must be sent again (400 naming
 * it), so a stored secret is never handed to a new destination, not even by the test on save.
 */
function prepareConfig(type: ConnectorType, raw: Record<string, unknown>, previous?: StoredConfig): PreparedConfig {
  const def = connectorTypeConfig(type);
  const config = raw;
  const errors = configErrors(type, config);
  if (errors.length) throw badRequest(`The configuration is not valid for a '${type}' connector. See errors for each field.`, errors);
  let full = def.defaults(config);
  const moved = previous ? changedPaths(previous.config, full, [...def.endpoints(previous.config), ...def.endpoints(full)]) : [];
  const secrets: SecretEntry[] = [];
  for (const path of secretPaths(def.configSchema, full)) {
    let value = getPath(full, path) as string;
    if (value === SECRET_PLACEHOLDER) {
      const kept = previous?.secrets.find(([p]) => pointer(p) === pointer(path));
      if (!kept) {
        errors.push({ path: '/config' + pointer(path), message: `is the placeholder ${SECRET_PLACEHOLDER} but no value is stored for it` });
        continue;
      }
      if (moved.length) {
        errors.push({ path: '/config' + pointer(path), message: resendMessage(moved) });
        continue;
      }
      value = kept[1];
    }
    secrets.push([path, value]);
    full = deletePath(full, path);
  }
  if (errors.length) throw badRequest(`The configuration is not valid for a '${type}' connector. See errors for each field.`, errors);
  return { config: full, secrets };
}

function resendMessage(moved: FieldPath[]): string {
  const fields = moved.map((p) => p.join('.')).join(', ');
  return `must be sent again, not as the placeholder ${SECRET_PLACEHOLDER}: the change of ${fields} changes where or as whom the connector connects, and a stored secret is never sent to a new destination`;
}

/**
 * The live test of a type with `testOnSave` (lib/connectors/registry.ts), run with the secrets (the stored
 * ones where the placeholder was sent) before anything is stored. A failure is a 400 whose detail says what
 * failed (the connector's message, secrets redacted once more); any other error stays a logged 500.
 */
async function testBeforeSave(type: ConnectorType, { config, secrets }: PreparedConfig): Promise<Record<string, unknown>> {
  if (!connectorTypeConfig(type).testOnSave) return config;
  let full = config;
  for (const [path, value] of secrets) full = setPath(full, path, value);
  try {
    // Settings the test decided from the server (an ldap connector's default anchorAttribute) are stored too.
    const { settings } = await testConnectorOnSave(type, full);
    const decided = Object.entries(settings ?? {}).filter(([k]) => config[k] === undefined);
    return decided.length ? { ...config, ...Object.fromEntries(decided) } : config;
  } catch (err) {
    if (!isConnectorError(err)) throw err;
    const message = redactSecrets(
      err.message,
      secrets.map(([, value]) => value),
    );
    throw badRequest(`The test connection failed, nothing was saved: ${message}`, [{ path: '/config', message: `${err.code}: ${message}` }]);
  }
}

/** What a connector's save stores: the public configuration and the secrets, validated (and tested when changed). */
export interface PreparedConnector {
  config: Record<string, unknown>;
  secrets: SecretEntry[];
  /** True when the configuration and secrets are those stored in `current` (then nothing was tested). */
  unchanged: boolean;
}

/**
 * Validate `raw` as the configuration of a `type` connector, as a create (no `current`) or an update of
 * `current` (a secret sent as the placeholder keeps the stored one; a PUT that leaves out the anchor keeps
 * it), then run the type's test on save unless nothing changed. Every refusal is a 400 naming its fields.
 */
export async function prepareConnectorSave(type: ConnectorType, raw: Record<string, unknown>, current?: StoredConnector): Promise<PreparedConnector> {
  if (!current) {
    const prepared = prepareConfig(type, raw);
    return { config: await testBeforeSave(type, prepared), secrets: prepared.secrets, unchanged: false };
  }
  const previous = unsealSecrets(current);
  const prepared = prepareConfig(type, raw, { config: current.config, secrets: previous });
  const { secrets } = prepared;
  let config = prepared.config;
  // The anchor identifies every object of the connector: a PUT that leaves it out keeps the stored one.
  if (config.anchorAttribute === undefined && current.config.anchorAttribute !== undefined)
    config = { ...config, anchorAttribute: current.config.anchorAttribute };
  // What was stored passed its test when it was saved: a PUT that changes only the name needs no source.
  const unchanged = canonicalJson(config) === canonicalJson(current.config) && canonicalJson(secrets) === canonicalJson(previous);
  if (!unchanged) config = await testBeforeSave(type, { config, secrets });
  return { config, secrets, unchanged };
}

/** A prepared connector as a stored snapshot (its secrets sealed for its id). */
export function preparedSnapshot(id: string, name: string, type: string, prepared: PreparedConnector, createdOn: string, updatedOn: string): ConnectorSnapshot {
  return {
    id,
    name,
    type,
    config: prepared.config,
    secretPaths: prepared.secrets.map(([p]) => p),
    sealedSecrets: sealSecrets(id, prepared.secrets),
    createdOn,
    updatedOn,
  };
}

/** 409 when the license's connector limit is reached. */
export async function checkConnectorLimit(adding = 1): Promise<void> {
  const limit = readLicense().limits.connectors;
  if (limit !== null && (await listConnectorRows()).length + adding > limit) {
    throw conflict(`The license allows at most ${limit} connectors.`);
  }
}

/** A save that was not made: it loosens a guard rail and waits for a second Admin (lib/api/configChanges.ts). */
export interface HeldSave {
  held: ConfigChangeView;
}

/**
 * The guard rails a connector save loosens (none when the four-eyes rule does not apply to the connector as it
 * is: then every save applies at once). `before`: the stored configuration, null for a create.
 */
export function guardRailReasons(
  before: Record<string, unknown> | null,
  after: Record<string, unknown>,
): { reasons: GuardRailReason[]; requireSecondPerson: boolean } {
  const global = readPlanSettings().requireSecondPerson;
  const requireSecondPerson = requiresSecondPerson(before ?? {}, global);
  return { reasons: requireSecondPerson ? loosenedGuardRails(before, after, global) : [], requireSecondPerson };
}

/** Apply a connector's save, or hold it for a second Admin when it loosens a guard rail. */
async function saveOrHold(write: PlannedWrite, caller: Caller): Promise<Connector | HeldSave> {
  const before = write.before as ConnectorSnapshot | null;
  const after = write.after as ConnectorSnapshot;
  // A new connector holds nothing its guard rails would protect yet: its create applies at once.
  const { reasons, requireSecondPerson } = before ? guardRailReasons(before.config, after.config) : { reasons: [], requireSecondPerson: false };
  if (reasons.length)
    return {
      held: await holdChange(
        { targetType: 'connector', targetId: write.targetId, action: write.action, reasons, writes: [write], requireSecondPerson },
        caller,
      ),
    };
  await storageWriter.apply(write, caller);
  continuousChanged();
  await recordAudit(caller, write.action === 'create' ? 'create' : 'update', 'connector', write.targetId);
  return getConnector(write.targetId);
}

export async function createConnector(input: CreateConnectorRequest, caller: Caller): Promise<Connector | HeldSave> {
  prepareConfig(input.type, input.config);
  await checkConnectorLimit();
  const prepared = await prepareConnectorSave(input.type, input.config);
  const id = randomUUID();
  const now = new Date().toISOString();
  const after = preparedSnapshot(id, input.name, input.type, prepared, now, now);
  return saveOrHold({ targetType: 'connector', targetId: id, action: 'create', before: null, after }, caller);
}

export async function updateConnector(id: string, input: UpdateConnectorRequest, caller: Caller): Promise<Connector | HeldSave> {
  const current = await getConnectorRecord(id);
  if (input.type !== undefined && input.type !== current.type) {
    throw badRequest('The connector type cannot change; create a new connector instead.', [
      { path: '/type', message: `must be '${current.type}' (the type cannot change)` },
    ]);
  }
  if (!isConnectorType(current.type)) throw badRequest(`Connectors of type '${current.type}' cannot be updated.`);
  const prepared = await prepareConnectorSave(current.type, input.config, current);
  const after = preparedSnapshot(id, input.name, current.type, prepared, current.createdOn, new Date().toISOString());
  return saveOrHold({ targetType: 'connector', targetId: id, action: 'update', before: connectorSnapshot(current), after }, caller);
}

/** The answer of `POST /connectors/{id}/test`. */
export interface ConnectionTestAnswer {
  ok: boolean;
  message: string;
  durationMs: number;
}

/**
 * Test a stored connector's connection now, with its stored configuration and secrets, for any type: bound as
 * the test on save is (`testConnectorOnSave`: `timeoutSeconds`, at most 10 s). A failed test is an answer
 * (`ok: false` and what failed, secrets redacted), not an error; an unknown connector is a 404. It changes
 * nothing: no run, no status change, no audit record (it writes nothing, and it can only reach what an Admin
 * saved). An error that is not a ConnectorError (a custom implementation's bug) is logged by kind only and
 * answered with a generic message: its text is not known to be safe to show.
 */
export async function testConnector(id: string, log: (message: string) => void = () => undefined): Promise<ConnectionTestAnswer> {
  const c = await getConnectorRecord(id);
  const secrets = unsealSecrets(c);
  let config = c.config;
  for (const [path, value] of secrets) config = setPath(config, path, value);
  const values = secrets.map(([, value]) => value);
  const started = performance.now();
  const answer = (ok: boolean, message: string) => ({ ok, message: redactSecrets(message, values), durationMs: Math.round(performance.now() - started) });
  try {
    return answer(true, (await testConnectorOnSave(c.type, config, { connectorId: id })).message);
  } catch (err) {
    if (isConnectorError(err)) return answer(false, `${err.code}: ${err.message}`);
    log(`The connection test of connector ${id} failed with an unexpected ${err instanceof Error ? err.name : typeof err}.`);
    return answer(false, 'internal: the connection test failed with an unexpected error (the service log has its kind).');
  }
}

/**
 * The decrypted configuration of a connector, secrets included: for the sync engine only, never for a
 * response or a log.
 */
/** What a connector delete answers: done, or held for a second Admin (a forced delete over its threshold). */
export type DeleteOutcome = { deleted: true } | HeldSave;

/**
 * `DELETE /connectors/{id}`: as {@link deleteConnector}, except that a run lock held by a run whose orchestration
 * is over (ended outside the engine) is released first (the run reconciled, lib/runs/runs.ts), so only a live
 * run makes it a 409.
 */
export async function deleteConnectorReleasingStaleLock(
  id: string,
  caller: Caller,
  orchestrations: RunOrchestrations,
  log: (message: string) => void,
  opts: { force?: boolean } = {},
): Promise<DeleteOutcome> {
  try {
    return await deleteConnector(id, caller, log, opts);
  } catch (err) {
    if (!(err instanceof AppError && err.code === 'conflict') || !(await releaseStaleRunLock(id, orchestrations, log))) throw err;
    return deleteConnector(id, caller, log, opts);
  }
}

const plural = (n: number, one: string, many = one + 's') => `${n} ${n === 1 ? one : many}`;

/**
 * Delete a connector: 409 while a run of it is Running or Queued. A connector that holds connector-space
 * objects or mesh contributions, or that a schedule runs, is a 409 naming how many objects, how many mesh
 * objects it would make tombstones and which schedules, unless `force`. Forced, the schedules that run it are
 * disabled with a note (each a versioned schedule change), and the mesh deletes it causes pass its `deletes`
 * threshold like a run's (percent of its connector-space objects): over it, the delete is held as a
 * configuration change awaiting a second Admin's approval, nothing deleted.
 *
 * The delete is recorded as a pending operation and the connector marked `deleting` (a 404 from then on) before
 * any cleanup, so a crash at any point is finished by `resumePendingOperations` at the next start. The cleanup
 * then runs here; when it fails the request still succeeds (the connector is gone for clients) and the start
 * step retries it.
 */
export async function deleteConnector(
  id: string,
  caller: Caller,
  log: (message: string) => void = () => undefined,
  opts: { force?: boolean } = {},
): Promise<DeleteOutcome> {
  const current = await getConnectorRecord(id);
  if (await findActiveRun(id)) throw conflict('A run of this connector is Running or Queued; wait for it to finish before deleting the connector.');
  const impact = await connectorDeleteImpact(id);
  const schedules = (await listSchedules()).filter((s) => s.steps.some((step) => step.connectorIds.includes(id)));
  const held = impact.connectorSpaceObjects > 0 || impact.meshObjects > 0 || schedules.length > 0;
  if (held && !opts.force) {
    const names = schedules.map((s) => s.name);
    throw new AppError(
      'conflict',
      `The connector '${current.name}' holds ${plural(impact.connectorSpaceObjects, 'connector-space object')} joined to ${plural(impact.meshObjects, 'mesh object')}, ` +
        `of which ${plural(impact.tombstones, 'mesh object')} would lose their last connector and become tombstones; ` +
        (names.length ? `the schedules ${names.map((n) => `'${n}'`).join(', ')} run it` : 'no schedule runs it') +
        '. Nothing was deleted. Delete it with ?force=true (the CLI: --force): the schedules are disabled, and deletes over its thresholds wait for a second Admin.',
      { members: { connectorSpaceObjects: impact.connectorSpaceObjects, meshObjects: impact.meshObjects, tombstones: impact.tombstones, schedules: names } },
    );
  }
  for (const s of schedules) {
    const after = {
      ...plainSnapshot(s),
      isEnabled: false,
      disabledReason: `Disabled by ${caller.upn ?? caller.name} on ${new Date().toISOString()}: the connector '${current.name}' (${id}) it runs was deleted with force.`,
      updatedOn: new Date().toISOString(),
    };
    await storageWriter.apply({ targetType: 'schedule', targetId: s.scheduleId, action: 'update', before: plainSnapshot(s), after }, caller);
    await recordAudit(caller, 'update', 'schedule', s.scheduleId, 'success', after.disabledReason);
  }
  if (schedules.length) schedulesChanged();
  const write: PlannedWrite = { targetType: 'connector', targetId: id, action: 'delete', before: connectorSnapshot(current), after: null };
  const deletes = thresholdsOf(current.config).deletes;
  const reasons = exceeded({ deletes }, { deletes: impact.tombstones }, impact.connectorSpaceObjects);
  if (reasons.length) {
    const requireSecondPerson = requiresSecondPerson(current.config, readPlanSettings().requireSecondPerson);
    return { held: await holdChange({ targetType: 'connector', targetId: id, action: 'delete', reasons, writes: [write], requireSecondPerson }, caller) };
  }
  const { operation: op } = await storageWriter.apply(write, caller);
  continuousChanged();
  await recordAudit(
    caller,
    'delete',
    'connector',
    id,
    'success',
    held
      ? `Forced: ${impact.connectorSpaceObjects} connector-space objects, ${impact.tombstones} mesh objects deleted, ${schedules.length} schedules disabled.`
      : undefined,
  );
  try {
    await finishConnectorDelete(op!);
  } catch (err) {
    log(`Cleanup of deleted connector ${id} did not finish (${(err as Error).name}); it is retried at the next start.`);
  }
  return { deleted: true };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
