import { createConnectorFor } from '../../connectors/factory';
import { memberNames, parseExpression } from '../../expression';
import { getConnectorRecord } from '../../storage/connectors';
import { listRules, type Rule } from '../../storage/rules';
import { deprovisioningSettings, AD_DISABLED } from '../deprovisioning';
import { readSyncState, saveFullReadAttributes } from '../run/state';

/**
 * What an import reads of a directory connector's objects (`ldap`, `active_directory`). By default every user
 * attribute (`*`). With `attributesFromRules: true` in its config and no `attributes` list: the attributes its
 * rules use, as Microsoft Identity Manager reads only a management agent's attribute inclusion list. Active Directory answers `*` with about 35 attributes per user (logon counters,
 * codePage, USNs...) that no rule reads, and every one of them is decoded, hashed and stored in the
 * connector space on every import.
 *
 * The rules' attributes, on the connector's side:
 * - JoinRule and ProjectionRule `sourceAttribute`; an inbound FlowRule `sourceAttribute`; an outbound FlowRule
 *   `targetAttribute` (its own import shows what the export wrote, so the engine can confirm it);
 * - a MeshComposerRule of the connector with `relationshipType` and no `targetAttribute`: its
 *   `sourceAttribute` (the reference attribute it renames);
 * - the names a join, projection or inbound flow script reads of `object` (`object.title`);
 * - the attributes `deprovisioning.disableAttributes` writes (the values they had are kept for a re-enable).
 * The connector adds what it needs itself: the anchor, objectClass, and the
 * reference attributes (all of the schema's on `ldap`, the well-known ones on Active Directory: references become relationships without a rule). `dn` and
 * `container` are on every object anyway; AD's pseudo-attribute `accountDisabled` is never read.
 *
 * Everything is read (`*`, as before) when the connector has no such rule (a new connector, imported to see
 * what the directory holds) or when a script uses `object` other than by a written name (`object[name]`).
 * `attributes: ["*"]` in the config reads everything whatever the rules; any other `attributes` list is read
 * as it is.
 *
 * A rule that reads an attribute the last full import did not read (a new flow of `title`) needs a full
 * import: stored connector-space objects and a delta's unchanged ones lack it. {@link newlyRead} tells which.
 */

/** Everything: the directory's `*`. */
export const ALL_ATTRIBUTES = '*';
export type ReadAttributes = string[] | typeof ALL_ATTRIBUTES;

const SYNTHETIC = new Set(['dn', 'container', AD_DISABLED.toLowerCase()]);

const isDirectory = (type: string) => type === 'ldap' || type === 'active_directory';
const configured = (config: Record<string, unknown>): string[] | undefined =>
  Array.isArray(config.attributes) && config.attributes.length > 0 ? config.attributes.map(String) : undefined;

/**
 * What imports of this connector read: its configured `attributes` (`*` when they include it), else with
 * `attributesFromRules: true` the rules' ({@link ruleAttributes}), else every user attribute; null for a
 * connector that is not a directory (it reads what it reads).
 */
export function importReads(connectorId: string, type: string, config: Record<string, unknown>, rules: readonly Rule[]): ReadAttributes | null {
  if (!isDirectory(type)) return null;
  const listed = configured(config);
  if (listed) return listed.includes(ALL_ATTRIBUTES) ? ALL_ATTRIBUTES : listed;
  if (config.attributesFromRules !== true) return ALL_ATTRIBUTES;
  return ruleAttributes(connectorId, type, config, rules);
}

/**
 * The attributes of its objects a directory connector's rules use (sorted, each once in the first spelling
 * met), or `*` when everything must be read. Pure.
 */
export function ruleAttributes(connectorId: string, type: string, config: Record<string, unknown>, rules: readonly Rule[]): ReadAttributes {
  const names = new Map<string, string>();
  const add = (n: string | null | undefined) => {
    if (!n || SYNTHETIC.has(n.toLowerCase()) || names.has(n.toLowerCase())) return;
    names.set(n.toLowerCase(), n);
  };
  let any = false;
  for (const r of rules) {
    if (!r.isEnabled || r.connectorId !== connectorId) continue;
    const outbound = r.ruleType === 'FlowRule' && r.direction === 'outbound';
    if (r.ruleType === 'MeshComposerRule') {
      if (r.relationshipType && !r.targetAttribute) {
        any = true;
        add(r.sourceAttribute);
      }
      continue;
    }
    if (r.ruleType !== 'JoinRule' && r.ruleType !== 'ProjectionRule' && r.ruleType !== 'FlowRule') continue;
    any = true;
    if (outbound) {
      add(r.targetAttribute);
      continue;
    }
    add(r.sourceAttribute);
    if (r.transformScript) {
      let read: Set<string> | null;
      try {
        read = memberNames(parseExpression(r.transformScript), 'object');
      } catch {
        // A script that does not parse fails its objects in the run; what it reads is unknown.
        read = null;
      }
      if (read === null) return ALL_ATTRIBUTES;
      for (const n of read) add(n);
    }
  }
  if (!any) return ALL_ATTRIBUTES;
  const deprovisioning = deprovisioningSettings(config, type);
  if (deprovisioning.action === 'disable') for (const n of Object.keys(deprovisioning.disableAttributes)) add(n);
  return [...names.values()].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0));
}

/**
 * The attributes `now` reads that a full import reading `before` did not (lower-cased; `*` when `now` reads
 * everything and `before` did not). Empty when `before` is unknown (null: no full import recorded what it read,
 * as before this existed, when everything was read).
 */
export function newlyRead(now: ReadAttributes, before: ReadAttributes | null): string[] {
  if (before === null || before === ALL_ATTRIBUTES) return [];
  const had = new Set(before.map((x) => x.toLowerCase()));
  if (now === ALL_ATTRIBUTES) return [ALL_ATTRIBUTES];
  return now.map((x) => x.toLowerCase()).filter((x) => !had.has(x));
}

/** The note of a run that could not read what the rules now use (see {@link newlyRead}). */
export function newlyReadNote(missing: string[]): string {
  const what = missing.includes(ALL_ATTRIBUTES)
    ? 'every attribute, where the last full import read only some'
    : `attributes the last full import did not read (${missing.join(', ')})`;
  return `The rules of this connector now read ${what}: a full import reads them for every object.`;
}

/**
 * An import's connector: a directory connector with `attributesFromRules` and no configured `attributes` reads the rules' attributes
 * (ConnectorContext.importAttributes). `missing`: what it reads that the last full import did not
 * ({@link newlyRead}).
 */
export async function importConnectorFor(connectorId: string): Promise<Awaited<ReturnType<typeof createConnectorFor>> & { missing: string[] }> {
  const [rules, state] = await Promise.all([listRules(), readSyncState(connectorId)]);
  let reads: ReadAttributes | null = null;
  const made = await createConnectorFor(connectorId, {
    importAttributes: (type, config) => {
      reads = importReads(connectorId, type, config, rules);
      return reads === null || reads === ALL_ATTRIBUTES || configured(config) ? undefined : reads;
    },
  });
  return { ...made, missing: reads === null ? [] : newlyRead(reads, state.fullReadAttributes) };
}

/** What a FullSync, processing stored objects, lacks of what the rules now read ({@link newlyRead}). */
export async function missingForFullSync(connectorId: string): Promise<string[]> {
  const [rules, state, { type, config }] = await Promise.all([listRules(), readSyncState(connectorId), getConnectorRecord(connectorId)]);
  const reads = importReads(connectorId, type, config, rules);
  return reads === null ? [] : newlyRead(reads, state.fullReadAttributes);
}

/** After a completed full import: record what it read (the rules as they are now, as the rules hash is). */
export async function recordFullRead(connectorId: string): Promise<void> {
  const [rules, { type, config }] = await Promise.all([listRules(), getConnectorRecord(connectorId)]);
  const reads = importReads(connectorId, type, config, rules);
  if (reads !== null) await saveFullReadAttributes(connectorId, reads);
}
