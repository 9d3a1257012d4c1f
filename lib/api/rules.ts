import { randomUUID } from 'node:crypto';
import type { Caller } from '../auth/permissions';
import { recordAudit } from '../audit';
import { badRequest, notFound, type FieldError } from '../core/errors';
import { isGuid } from '../http/request';
import type { RuleRequest } from '../schemas/rules';
import { connectorExists } from '../storage/connectors';
import { getRule as readRule, listRules, type Rule, type RuleQuery, type StoredRule } from '../storage/rules';
import { plainSnapshot } from '../config/snapshots';
import { storageWriter } from '../config/writer';
import { expressionErrors } from './expressions';
import { checkRuleAttributes } from './ruleAttributes';
import { toUniqueRule, uniqueConnectorIds, uniqueErrors } from './uniqueRules';

/**
 * Rules as the Admin API sees them: per-type required fields, confidence 0..100 (schema), transformScript
 * parsed by the engine's parser, the connector must exist, and every write audited.
 */

const REQUIRED: Record<Rule['ruleType'], (keyof RuleRequest)[]> = {
  JoinRule: ['connectorId', 'sourceAttribute', 'targetAttribute'],
  ProjectionRule: ['connectorId', 'sourceAttribute'],
  // confidence only for an inbound FlowRule: it ranks contributions to the mesh; an outbound one has no use
  // for it (stored and returned as null when not given).
  FlowRule: ['connectorId', 'sourceAttribute', 'targetAttribute'],
  MeshComposerRule: [],
};

const ONLY_FOR: Partial<Record<keyof RuleRequest, Rule['ruleType']>> = {
  direction: 'FlowRule',
  evaluateWhenAbsent: 'FlowRule',
  effectiveFromAttribute: 'FlowRule',
  objectType: 'ProjectionRule',
  relationshipType: 'MeshComposerRule',
  match: 'JoinRule',
  fuzzyThreshold: 'JoinRule',
};

function requirementErrors(body: RuleRequest): FieldError[] {
  const errors: FieldError[] = [];
  const required = [...REQUIRED[body.ruleType]];
  if (body.ruleType === 'MeshComposerRule')
    // A unique computed attribute's candidates replace its transformScript (docs/unique-values.md).
    required.push(
      ...((body.relationshipType ? ['sourceAttribute'] : body.unique ? ['targetAttribute'] : ['targetAttribute', 'transformScript']) as (keyof RuleRequest)[]),
    );
  // Only a valid inbound direction (or none) asks for confidence: with a misspelt one the schema's error says it.
  if (body.ruleType === 'FlowRule' && (body.direction === undefined || body.direction === null || body.direction === 'inbound')) required.push('confidence');
  for (const field of required) {
    if (body[field] === undefined || body[field] === null) {
      errors.push({ path: `/${field}`, message: `is required for ${field === 'confidence' ? 'an inbound FlowRule' : `a ${body.ruleType}`}` });
    }
  }
  for (const [field, type] of Object.entries(ONLY_FOR)) {
    if (body[field as keyof RuleRequest] !== undefined && body.ruleType !== type) errors.push({ path: `/${field}`, message: `applies only to a ${type}` });
  }
  if (body.fuzzyThreshold !== undefined && body.ruleType === 'JoinRule' && body.match !== 'fuzzy')
    errors.push({ path: '/fuzzyThreshold', message: 'applies only with match fuzzy' });
  if (body.effectiveFromAttribute && body.ruleType === 'FlowRule' && body.direction === 'outbound')
    errors.push({ path: '/effectiveFromAttribute', message: 'applies only to an inbound FlowRule' });
  if (typeof body.connectorId === 'string' && !isGuid(body.connectorId)) {
    errors.push({ path: '/connectorId', message: 'must be a connector id (a GUID)' });
  }
  errors.push(
    ...expressionErrors(
      body.transformScript,
      '/transformScript',
      body.ruleType === 'FlowRule' && body.direction === 'outbound' ? 'outboundFlow' : 'rule',
      // Inbound flows and computed attributes may read the clock: imports record when they change (docs/dated-changes.md).
      body.ruleType === 'FlowRule' || (body.ruleType === 'MeshComposerRule' && !body.relationshipType),
    ),
  );
  errors.push(...uniqueErrors(body));
  return errors;
}

/**
 * The per-type errors of a rule request that failed its schema (any shape): the required fields of its type
 * and its script, so that the 400 lists them with the schema's errors (readJson `innerErrors`).
 */
export function ruleRequestInnerErrors(body: unknown): FieldError[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return [];
  const ruleType = (body as { ruleType?: unknown }).ruleType;
  if (typeof ruleType !== 'string' || !Object.hasOwn(REQUIRED, ruleType)) return [];
  return requirementErrors(body as RuleRequest);
}

async function checkRule(body: RuleRequest): Promise<void> {
  const errors = requirementErrors(body);
  if (errors.length) throw badRequest('The rule is not valid. See errors for each field.', errors);
  if (body.connectorId && !(await connectorExists(body.connectorId.toLowerCase()))) {
    throw badRequest('The rule names a connector that does not exist.', [{ path: '/connectorId', message: 'is not an existing connector' }]);
  }
  const missing: FieldError[] = [];
  for (const c of uniqueConnectorIds(body)) if (!(await connectorExists(c.id))) missing.push({ path: c.path, message: 'is not an existing connector' });
  if (missing.length) throw badRequest('The rule names a connector that does not exist.', missing);
}

/**
 * Every error of a rule as a create or update checks it, without I/O beyond `connectorExists` (the connectors
 * the rule may name): the per-type requirements, the script, and the connector.
 */
export async function ruleErrors(body: RuleRequest, connectorExists: (id: string) => Promise<boolean>): Promise<FieldError[]> {
  const errors = requirementErrors(body);
  if (!errors.length && body.connectorId && !(await connectorExists(body.connectorId.toLowerCase()))) {
    errors.push({ path: '/connectorId', message: 'is not an existing connector' });
  }
  if (!errors.length)
    for (const c of uniqueConnectorIds(body)) if (!(await connectorExists(c.id))) errors.push({ path: c.path, message: 'is not an existing connector' });
  return errors;
}

/** A valid rule request as the stored rule (defaults applied). */
export function toRule(ruleId: string, body: RuleRequest, createdOn: string, updatedOn: string): Rule {
  const rule: Rule = {
    ruleId,
    ruleName: body.ruleName,
    ruleType: body.ruleType,
    connectorId: body.connectorId ? body.connectorId.toLowerCase() : null,
    priority: body.priority ?? 100,
    isEnabled: body.isEnabled ?? true,
    sourceAttribute: body.sourceAttribute ?? null,
    targetAttribute: body.targetAttribute ?? null,
    confidence: body.confidence ?? null,
    transformScript: body.transformScript ?? null,
    createdOn,
    updatedOn,
  };
  if (body.ruleType === 'FlowRule') {
    rule.direction = body.direction ?? 'inbound';
    rule.evaluateWhenAbsent = body.evaluateWhenAbsent ?? false;
    const unique = toUniqueRule(body);
    if (unique) rule.unique = unique;
    if (body.effectiveFromAttribute && rule.direction === 'inbound') rule.effectiveFromAttribute = body.effectiveFromAttribute;
  }
  if (body.ruleType === 'ProjectionRule') rule.objectType = body.objectType ?? 'User';
  if (body.ruleType === 'MeshComposerRule') {
    rule.relationshipType = body.relationshipType ?? null;
    const unique = rule.relationshipType ? undefined : toUniqueRule(body);
    if (unique) rule.unique = unique;
  }
  // Left out unless given, so that join rules without them stay as they were stored.
  if (body.ruleType === 'JoinRule' && body.match) rule.match = body.match;
  if (body.ruleType === 'JoinRule' && body.match === 'fuzzy') rule.fuzzyThreshold = body.fuzzyThreshold ?? 0.9;
  return rule;
}

export function ruleView(r: StoredRule): Rule {
  const { etag: _etag, ...rule } = r;
  return rule;
}

export async function getRule(ruleId: string): Promise<StoredRule> {
  const r = await readRule(ruleId);
  if (!r) throw notFound(`Rule '${ruleId}' does not exist.`);
  return r;
}

export async function queryRules(q: { connectorId?: string; ruleType?: string; skip: number; take: number }): Promise<{ items: Rule[]; totalCount: number }> {
  // The query string's ruleType is checked against the rule types by RULES_QUERY (lib/api/queries.ts).
  const all = await listRules({ connectorId: q.connectorId, ruleType: q.ruleType as RuleQuery['ruleType'] });
  return { items: all.slice(q.skip, q.skip + q.take).map(ruleView), totalCount: all.length };
}

export async function createRule(request: RuleRequest, caller: Caller): Promise<Rule> {
  await checkRule(request);
  // A directory connector's attribute names: checked against its schema, stored in its spelling.
  const body = await checkRuleAttributes(request);
  const now = new Date().toISOString();
  const rule = toRule(randomUUID(), body, now, now);
  await storageWriter.apply({ targetType: 'rule', targetId: rule.ruleId, action: 'create', before: null, after: rule }, caller);
  await recordAudit(caller, 'create', 'rule', rule.ruleId);
  return ruleView(await getRule(rule.ruleId));
}

export async function updateRule(ruleId: string, request: RuleRequest, caller: Caller): Promise<Rule> {
  const current = await getRule(ruleId);
  if (request.ruleType !== current.ruleType) {
    throw badRequest('The rule type cannot change; create a new rule instead.', [
      { path: '/ruleType', message: `must be '${current.ruleType}' (the rule type cannot change)` },
    ]);
  }
  await checkRule(request);
  const body = await checkRuleAttributes(request);
  const rule = toRule(ruleId, body, current.createdOn, new Date().toISOString());
  await storageWriter.apply({ targetType: 'rule', targetId: ruleId, action: 'update', before: plainSnapshot(current), after: rule }, caller);
  await recordAudit(caller, 'update', 'rule', ruleId);
  return ruleView(await getRule(ruleId));
}

export async function deleteRule(ruleId: string, caller: Caller): Promise<void> {
  const current = await getRule(ruleId);
  await storageWriter.apply({ targetType: 'rule', targetId: ruleId, action: 'delete', before: plainSnapshot(current), after: null }, caller);
  await recordAudit(caller, 'delete', 'rule', ruleId);
}
