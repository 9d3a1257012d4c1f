import type { FieldError } from '../core/errors';
import { isGuid } from '../http/request';
import type { RuleRequest } from '../schemas/rules';
import type { UniqueRule } from '../storage/uniqueValues';
import { expressionErrors } from './expressions';

/**
 * The `unique` object of a rule request (docs/unique-values.md), checked where the schema cannot: only an
 * outbound FlowRule or a computed attribute (a MeshComposerRule without relationshipType) has one, each
 * candidate parses and reads only its scope's names (`uniqueCandidate`, `uniqueComputed` for a computed
 * attribute), counter.from <= counter.to (at most 1000 values), connectorIds only with scope targets and each a
 * GUID, a computed attribute's scope `mesh` or `targets` (it has no connector of its own). The connectors'
 * existence is checked with the rule's own connector ({@link uniqueConnectorIds}).
 */
export function uniqueErrors(body: RuleRequest): FieldError[] {
  const u = body.unique;
  if (u === undefined || u === null) return [];
  const computed = isComputed(body);
  if (!computed && (body.ruleType !== 'FlowRule' || body.direction !== 'outbound'))
    return [{ path: '/unique', message: 'applies only to an outbound FlowRule or a computed attribute (MeshComposerRule)' }];
  const errors: FieldError[] = [];
  u.candidates.forEach((c, i) => errors.push(...expressionErrors(c, `/unique/candidates/${i}`, computed ? 'uniqueComputed' : 'uniqueCandidate')));
  if (computed && u.scope === 'connector') errors.push({ path: '/unique/scope', message: "must be 'mesh' or 'targets' for a computed attribute" });
  const from = u.counter?.from ?? 2;
  const to = u.counter?.to ?? 99;
  if (from > to) errors.push({ path: '/unique/counter', message: 'from must not be greater than to' });
  else if (to - from >= 1000) errors.push({ path: '/unique/counter', message: 'may give at most 1000 values (to - from < 1000)' });
  const scope = u.scope ?? defaultScope(body);
  if (u.connectorIds !== undefined && scope !== 'targets') errors.push({ path: '/unique/connectorIds', message: "applies only to scope 'targets'" });
  if (scope === 'targets' && !u.connectorIds?.length) errors.push({ path: '/unique/connectorIds', message: "is required for scope 'targets'" });
  u.connectorIds?.forEach((id, i) => {
    if (!isGuid(id)) errors.push({ path: `/unique/connectorIds/${i}`, message: 'must be a connector id (a GUID)' });
  });
  if (u.meshAttribute !== undefined && scope !== 'mesh') errors.push({ path: '/unique/meshAttribute', message: "applies only to scope 'mesh'" });
  return errors;
}

/** The connectors a valid `unique` names (to check that they exist), with the path of each. */
export function uniqueConnectorIds(body: RuleRequest): { id: string; path: string }[] {
  return (body.unique?.connectorIds ?? []).map((id, i) => ({ id: id.toLowerCase(), path: `/unique/connectorIds/${i}` }));
}

/** A valid request's `unique` with its defaults (the rule's own connector added to a targets list). */
export function toUniqueRule(body: RuleRequest): UniqueRule | undefined {
  const u = body.unique;
  if (!u) return undefined;
  const scope = u.scope ?? defaultScope(body);
  // An outbound flow's own connector is in its targets list; a computed attribute's connector (if any) is not a target.
  const own = body.connectorId && !isComputed(body) ? body.connectorId.toLowerCase() : '';
  const rule: UniqueRule = {
    candidates: [...u.candidates],
    scope,
    counter: { from: u.counter?.from ?? 2, to: u.counter?.to ?? 99 },
    caseSensitive: u.caseSensitive ?? false,
    keepOnRename: u.keepOnRename ?? true,
    quarantineDays: u.quarantineDays ?? 90,
  };
  if (scope === 'targets') rule.connectorIds = [...new Set([own, ...(u.connectorIds ?? []).map((id) => id.toLowerCase())])].filter(Boolean).sort();
  if (scope === 'mesh') rule.meshAttribute = u.meshAttribute ?? body.targetAttribute ?? undefined;
  return rule;
}

/** A computed attribute (projection time): a MeshComposerRule that gives a value, not a relationship. */
const isComputed = (body: RuleRequest) => body.ruleType === 'MeshComposerRule' && !body.relationshipType;

/** Scope `connector` for an outbound flow, `mesh` for a computed attribute. */
const defaultScope = (body: RuleRequest) => (isComputed(body) ? 'mesh' : 'connector');
