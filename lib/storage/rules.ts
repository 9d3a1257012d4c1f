import { conflict, notFound } from '../core/errors';
import { createEntity, deleteEntity, getEntity, isStatus, listEntities, odata, table, updateEntity } from './tables';
import type { UniqueRule } from './uniqueValues';

/**
 * Rules repository (table `Rules`): PartitionKey `rule`, RowKey the rule id; the rule itself as JSON in
 * `body`, with `connectorId` and `ruleType` also as columns for filtering. Rules are configuration (tens to
 * hundreds), so a list reads the one partition, filtered server-side, and orders in memory: by `priority`,
 * then `ruleName` (case-insensitive), then id.
 *
 * Concurrency: update and delete are ETag-conditional when given an ETag (a lost race is a 409).
 */
export const RULE_TYPES = ['JoinRule', 'FlowRule', 'ProjectionRule', 'MeshComposerRule'] as const;
export type RuleType = (typeof RULE_TYPES)[number];

export interface Rule {
  ruleId: string;
  ruleName: string;
  ruleType: RuleType;
  /** Null only for a mesh-wide MeshComposerRule. */
  connectorId: string | null;
  priority: number;
  isEnabled: boolean;
  sourceAttribute: string | null;
  targetAttribute: string | null;
  confidence: number | null;
  transformScript: string | null;
  /** FlowRule only. */
  direction?: 'inbound' | 'outbound';
  /**
   * FlowRule only: evaluate the script even when the source attribute is absent (`source` is then null). By
   * default a flow whose source attribute is absent is not evaluated: the connector contributes nothing to
   * the attribute (inbound), or the attribute is left out of an add and cleared by an update (outbound).
   */
  evaluateWhenAbsent?: boolean;
  /** Outbound FlowRule or computed attribute (MeshComposerRule): the value is generated unique from candidates (lib/sync/unique, docs/unique-values.md). */
  unique?: UniqueRule;
  /**
   * Inbound FlowRule only: the source attribute holding the date the value takes effect; before it the mesh
   * keeps the connector's previous value (docs/dated-changes.md, "Future-dated values").
   */
  effectiveFromAttribute?: string;
  /** ProjectionRule only. */
  objectType?: string;
  /** MeshComposerRule only (null: the rule computes an attribute). */
  relationshipType?: string | null;
  /** JoinRule only: how values are compared when the connector scores candidates (docs/correlation.md); default exact. */
  match?: 'exact' | 'normalized' | 'fuzzy';
  /** JoinRule with `match: fuzzy` only: the least name similarity (0..1) that makes a candidate. */
  fuzzyThreshold?: number;
  createdOn: string;
  updatedOn: string;
}

export type StoredRule = Rule & { etag: string };

const TABLE = 'Rules';
const PK = 'rule';

function fromEntity(e: { body?: unknown; etag: string }): StoredRule {
  return { ...(JSON.parse(String(e.body)) as Rule), etag: e.etag };
}

function toEntity(rule: Rule) {
  return { partitionKey: PK, rowKey: rule.ruleId, connectorId: rule.connectorId ?? '', ruleType: rule.ruleType, body: JSON.stringify(rule) };
}

export async function getRule(ruleId: string): Promise<StoredRule | null> {
  const client = await table(TABLE);
  try {
    return fromEntity(await getEntity(client, PK, ruleId));
  } catch (err) {
    if (isStatus(err, 404)) return null;
    throw err;
  }
}

export async function insertRule(rule: Rule): Promise<StoredRule> {
  const client = await table(TABLE);
  await createEntity(client, toEntity(rule));
  return (await getRule(rule.ruleId))!;
}

export async function replaceRule(rule: Rule, etag: string): Promise<StoredRule> {
  const client = await table(TABLE);
  try {
    await updateEntity(client, toEntity(rule), 'Replace', { etag });
  } catch (err) {
    if (isStatus(err, 412)) throw conflict('The rule was changed by another request; read it again and retry.');
    if (isStatus(err, 404)) throw notFound(`Rule '${rule.ruleId}' does not exist.`);
    throw err;
  }
  return (await getRule(rule.ruleId))!;
}

/** Delete a rule; true when it existed. */
export async function deleteRule(ruleId: string, etag?: string): Promise<boolean> {
  const client = await table(TABLE);
  try {
    await deleteEntity(client, PK, ruleId, etag ? { etag } : undefined);
    return true;
  } catch (err) {
    if (isStatus(err, 404)) return false;
    if (isStatus(err, 412)) throw conflict('The rule was changed by another request; read it again and retry.');
    throw err;
  }
}

export interface RuleQuery {
  connectorId?: string;
  ruleType?: RuleType;
}

/** Every matching rule, ordered by priority, then name (case-insensitive), then id. */
export async function listRules(q: RuleQuery = {}): Promise<StoredRule[]> {
  const client = await table(TABLE);
  const filters = [`PartitionKey eq '${PK}'`];
  if (q.connectorId) filters.push(`connectorId eq ${odata(q.connectorId)}`);
  if (q.ruleType) filters.push(`ruleType eq ${odata(q.ruleType)}`);
  const out: StoredRule[] = [];
  for await (const e of listEntities(client, { queryOptions: { filter: filters.join(' and ') } })) out.push(fromEntity(e));
  return out.sort((a, b) => a.priority - b.priority || cmp(a.ruleName.toLowerCase(), b.ruleName.toLowerCase()) || cmp(a.ruleId, b.ruleId));
}

/** Delete every rule of a connector (connector deletion). Safe to repeat. */
export async function deleteRulesOfConnector(connectorId: string): Promise<number> {
  let n = 0;
  for (const r of await listRules({ connectorId })) if (await deleteRule(r.ruleId)) n++;
  return n;
}

/** Ordinal comparison: the same order on every machine, whatever its locale. */
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
