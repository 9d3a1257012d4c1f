import { createHash } from 'node:crypto';
import { canonicalJsonOf } from '../config/canonical';
import { listVersionHeads, type VersionHead } from '../config/versions';
import { conflict } from '../core/errors';
import { readConnectorRow, type StoredConnector } from '../storage/connectors';
import { getRunBinding, putRunBinding, type BoundItem } from '../storage/runBindings';
import { listRules, type StoredRule } from '../storage/rules';
import type { RunType, StoredRun } from '../storage/runs';

/**
 * Plans and held runs bind the configuration they were made with.
 *
 * When a run begins, the connectors and rules in force for it are recorded as fingerprints
 * (lib/storage/runBindings.ts): its own connector, and for an import (FullImport, DeltaImport, FullSync) the
 * targets its plan previews too (every connector with an enabled outbound flow rule); the enabled rules of
 * those connectors, and every enabled mesh-wide composer rule. A rule's fingerprint is its stored definition
 * without its timestamps; a connector's, its type and configuration without secret values (a rotated
 * password changes nothing a plan shows).
 *
 * The apply of a plan and the approval of a held run compare that binding with the configuration now: any
 * rule or connector changed, added or removed since refuses them (409), naming what changed, when and by whom
 * (from the configuration history). The drift rule alone would not catch it: a rule change changes what an
 * object gets without changing the object's inputs. One read of the rules and of the bound connectors at
 * begin and at the apply or approval, never per object.
 */

const IMPORTS: readonly RunType[] = ['FullImport', 'DeltaImport', 'FullSync'];

const digest = (value: unknown) => createHash('sha256').update(canonicalJsonOf(value)).digest('base64url').slice(0, 22);

function ruleHash(r: StoredRule): string {
  const { etag: _etag, createdOn: _createdOn, updatedOn: _updatedOn, ...definition } = r;
  return digest(definition);
}

const connectorHash = (c: StoredConnector) => digest({ type: c.type, config: c.config, secretPaths: c.secretPaths });

/** The connectors and rules in force for a run of `connectorId`, as fingerprints (see the module comment). */
export async function configurationOf(connectorId: string, runType: RunType): Promise<BoundItem[]> {
  const rules = (await listRules()).filter((r) => r.isEnabled);
  const scope = new Set([connectorId]);
  if (IMPORTS.includes(runType)) for (const r of rules) if (r.ruleType === 'FlowRule' && r.direction === 'outbound' && r.connectorId) scope.add(r.connectorId);
  const items: BoundItem[] = [];
  for (const id of [...scope].sort()) {
    const row = await readConnectorRow(id);
    if (row && row.state === 'ready') items.push({ targetType: 'connector', id, name: row.name, hash: connectorHash(row) });
  }
  for (const r of rules)
    if ((r.connectorId && scope.has(r.connectorId)) || r.ruleType === 'MeshComposerRule')
      items.push({ targetType: 'rule', id: r.ruleId, name: r.ruleName, kind: r.ruleType, hash: ruleHash(r) });
  return items;
}

/** Record the configuration a run begins with. */
export async function bindRun(runId: string, connectorId: string, runType: RunType, now = new Date()): Promise<void> {
  await putRunBinding({ runId, boundOn: now.toISOString(), items: await configurationOf(connectorId, runType) });
}

export interface ConfigDrift {
  targetType: 'connector' | 'rule';
  id: string;
  /** How it is named in a message: `rule 'Title' (FlowRule, id ...)`. */
  label: string;
  change: 'changed' | 'added' | 'removed';
}

/** What changed between a bound configuration and the one now (pure). */
export function driftOf(bound: readonly BoundItem[], now: readonly BoundItem[]): ConfigDrift[] {
  const key = (i: BoundItem) => `${i.targetType}|${i.id}`;
  const label = (i: BoundItem) => (i.targetType === 'rule' ? `rule '${i.name}' (${i.kind ?? 'rule'}, id ${i.id})` : `connector '${i.name}' (id ${i.id})`);
  const current = new Map(now.map((i) => [key(i), i]));
  const out: ConfigDrift[] = [];
  for (const b of bound) {
    const c = current.get(key(b));
    if (!c) out.push({ targetType: b.targetType, id: b.id, label: label(b), change: 'removed' });
    else if (c.hash !== b.hash) out.push({ targetType: b.targetType, id: b.id, label: label(c), change: 'changed' });
    current.delete(key(b));
  }
  for (const c of current.values()) out.push({ targetType: c.targetType, id: c.id, label: label(c), change: 'added' });
  return out;
}

const WORDS: Record<VersionHead['action'], string> = { create: 'created', update: 'changed', delete: 'deleted', restore: 'restored' };
const FALLBACK: Record<ConfigDrift['change'], string> = { changed: 'changed', added: 'added (or enabled)', removed: 'deleted or disabled' };
/** Changes named one by one in a message; the rest are counted. */
const NAMED = 5;

/** One drift as a sentence: what, then when and by whom from the newest version of it since `since`. */
async function describe(d: ConfigDrift, since: string): Promise<string> {
  const heads = (await listVersionHeads({ targetType: d.targetType, targetId: d.id })).filter((h) => h.timestamp >= since);
  const last = heads.find((h) => h.state === 'committed') ?? heads[0];
  if (!last) return `${d.label} was ${FALLBACK[d.change]}`;
  const word = d.change === 'changed' || last.action !== 'update' ? WORDS[last.action] : FALLBACK[d.change];
  return `${d.label} was ${word} on ${last.timestamp} by ${last.actorUpn ?? last.actorSid ?? 'an unknown caller'} (configuration version ${last.versionId})`;
}

/**
 * What changed in the configuration a run was made with, as one sentence; null when nothing did, or when the
 * run has no binding (recorded before bindings were).
 */
export async function configChangedSince(run: Pick<StoredRun, 'runId' | 'connectorId' | 'runType'>): Promise<string | null> {
  const binding = await getRunBinding(run.runId);
  if (!binding) return null;
  const drift = driftOf(binding.items, await configurationOf(run.connectorId, run.runType));
  if (!drift.length) return null;
  const named = await Promise.all(drift.slice(0, NAMED).map((d) => describe(d, binding.boundOn)));
  const more = drift.length > NAMED ? `, and ${drift.length - NAMED} more` : '';
  return `${named.join('; ')}${more}`;
}

/**
 * Refuse (409) the apply of a plan made with a configuration that changed since: nothing is applied, the plan
 * stays unapplied.
 */
export async function refuseStalePlan(plan: Pick<StoredRun, 'runId' | 'connectorId' | 'runType'>): Promise<void> {
  const changed = await configChangedSince(plan);
  if (changed)
    throw conflict(
      `The configuration changed since this plan was made: ${changed}. Nothing was applied and the plan stays unapplied: make a new dry run (its plan shows what the current rules do) and apply that.`,
    );
}

/**
 * Refuse (409) the approval of a held run whose configuration changed since it was made: nothing is applied,
 * the run stays AwaitingApproval (so it can be rejected).
 */
export async function refuseStaleApproval(run: Pick<StoredRun, 'runId' | 'connectorId' | 'runType'>): Promise<void> {
  const changed = await configChangedSince(run);
  if (changed)
    throw conflict(
      `The configuration changed since this run was held for approval: ${changed}. The plan under review is not what the run would now apply, so it was not approved and nothing was applied; the run stays AwaitingApproval: reject it and start a new run, whose plan shows what the current rules do.`,
    );
}
