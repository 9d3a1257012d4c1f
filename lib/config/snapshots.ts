import { setPath } from '../secrets';
import { SECRET_PLACEHOLDER } from '../secrets';
import { canonicalJsonOf } from './canonical';
import type { StoredConnector } from '../storage/connectors';
import type { Rule } from '../storage/rules';
import type { Schedule } from '../storage/schedules';

/**
 * What a configuration version keeps of its target, before and after the change.
 *
 * A connector's snapshot is its stored form: the configuration without secret values, where the secrets go
 * (`secretPaths`), and the secrets sealed exactly as the connector's own row seals them (AES-256-GCM with the
 * connector's id as additional data, lib/secrets). So a restore can put the secrets back as they were then,
 * and nothing outside the service can read them: every answer shows a snapshot through {@link snapshotView},
 * which drops the sealed blob and puts `********` where each secret goes.
 */
export const TARGET_TYPES = ['connector', 'rule', 'schedule'] as const;
export type TargetType = (typeof TARGET_TYPES)[number];
export const VERSION_ACTIONS = ['create', 'update', 'delete', 'restore'] as const;
export type VersionAction = (typeof VERSION_ACTIONS)[number];

export interface ConnectorSnapshot {
  id: string;
  name: string;
  type: string;
  config: Record<string, unknown>;
  secretPaths: string[][];
  sealedSecrets: string | null;
  createdOn: string;
  updatedOn: string;
}

export type RuleSnapshot = Rule;
export type ScheduleSnapshot = Schedule;
export type Snapshot = ConnectorSnapshot | RuleSnapshot | ScheduleSnapshot;

/** The snapshot of a stored connector row. */
export function connectorSnapshot(c: Omit<StoredConnector, 'etag' | 'state' | 'pendingName' | 'status' | 'lastSync'>): ConnectorSnapshot {
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    config: c.config,
    secretPaths: c.secretPaths,
    sealedSecrets: c.sealedSecrets,
    createdOn: c.createdOn,
    updatedOn: c.updatedOn,
  };
}

/** A rule or schedule as stored, without its ETag. */
export function plainSnapshot<T extends object>(stored: T & { etag?: string }): T {
  const { etag: _etag, ...rest } = stored;
  return rest as T;
}

/** A connector's configuration with `********` where each secret goes. */
export function maskedConfig(s: Pick<ConnectorSnapshot, 'config' | 'secretPaths'>): Record<string, unknown> {
  let config = s.config;
  for (const path of s.secretPaths) config = setPath(config, path, SECRET_PLACEHOLDER);
  return config;
}

/** A snapshot as answers show it: a connector without its sealed secrets, `********` where each one goes. */
export function snapshotView(targetType: TargetType, s: Snapshot | null): Record<string, unknown> | null {
  if (!s) return null;
  if (targetType !== 'connector') return { ...s };
  const c = s as ConnectorSnapshot;
  return { id: c.id, name: c.name, type: c.type, config: maskedConfig(c), createdOn: c.createdOn, updatedOn: c.updatedOn };
}

/** The id of a snapshot's target. */
export function snapshotId(targetType: TargetType, s: Snapshot): string {
  if (targetType === 'connector') return (s as ConnectorSnapshot).id;
  if (targetType === 'rule') return (s as RuleSnapshot).ruleId;
  return (s as ScheduleSnapshot).scheduleId;
}

/** True when two snapshots are the same stored state (sealed secrets compared as stored: each seal is unique). */
export function sameSnapshot(a: Snapshot | null, b: Snapshot | null): boolean {
  if (a === null || b === null) return a === b;
  return canonicalJsonOf(a) === canonicalJsonOf(b);
}

/** One field an update changes: its JSON Pointer in the item, and its value before and after (null: not set). */
export interface FieldChange {
  path: string;
  before: unknown;
  after: unknown;
}

/** Fields every version changes, or that name the item rather than describe it. */
const BOOKKEEPING = new Set(['createdOn', 'updatedOn', 'id', 'ruleId', 'scheduleId']);

function leaves(value: unknown, path: string, out: Map<string, unknown>): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    // An empty object has no leaves: `{}` and an absent object are the same configuration.
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) leaves(v, `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, out);
  } else if (value !== undefined) out.set(path, value);
}

/**
 * What an update changes, field by field, as answers may show it: both sides through {@link snapshotView}
 * (secrets as `********`), objects walked to their leaves, an array compared whole. `secretsChanged` names the
 * secret paths given a new value: shown as `********` -> `********` (the value itself is never shown).
 */
export function fieldChanges(targetType: TargetType, before: Snapshot, after: Snapshot, secretsChanged: string[][] = []): FieldChange[] {
  const a = new Map<string, unknown>();
  const b = new Map<string, unknown>();
  for (const [k, v] of Object.entries(snapshotView(targetType, before) ?? {})) if (!BOOKKEEPING.has(k)) leaves(v, `/${k}`, a);
  for (const [k, v] of Object.entries(snapshotView(targetType, after) ?? {})) if (!BOOKKEEPING.has(k)) leaves(v, `/${k}`, b);
  const out: FieldChange[] = [];
  for (const path of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(path);
    const y = b.get(path);
    if (canonicalJsonOf(x ?? null) !== canonicalJsonOf(y ?? null)) out.push({ path, before: x ?? null, after: y ?? null });
  }
  for (const secret of secretsChanged) {
    const path = `/config/${secret.join('/')}`;
    if (!out.some((f) => f.path === path)) out.push({ path, before: a.has(path) ? SECRET_PLACEHOLDER : null, after: SECRET_PLACEHOLDER });
  }
  return out;
}
