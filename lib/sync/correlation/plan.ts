import type { AttributeValue, ConnectorObject } from '../../connectors/sdk';
import { shownValue } from '../../core/secretAttributes';
import { displayAttributes, displayNameOf } from '../../mesh/displayName';
import { projectedMeshId, type MeshObject } from '../../mesh/model';
import { csObjectIdOf } from '../space/csIds';
import type { CompiledRule, RuleSet } from '../rules';
import { listDecisions, openCaseAnchors, type CaseCandidate, type CorrelationCase, type ManualDecision } from './caseStore';
import { decideCorrelation, scoreCandidates, type CorrelationOutcome, type CorrelationSettings, type ScoringIndex } from './score';

/**
 * What the planner knows of correlation while it plans a page of one connector (docs/correlation.md): the
 * connector's settings (null: it did not opt in; its join rules work as they always did), the operators'
 * decisions by anchor, and its open cases (anchor -> when each opened).
 */
export interface CorrelationContext {
  settings: CorrelationSettings | null;
  decisions: Map<string, ManualDecision>;
  openCases: Map<string, string>;
}

/** The connector's `config.correlation`, or null when it has none. */
export function correlationSettings(config: unknown): CorrelationSettings | null {
  const c = (config as { correlation?: { autoJoinConfidence?: unknown; caseOnMissingKey?: unknown } } | null | undefined)?.correlation;
  if (!c || typeof c.autoJoinConfidence !== 'number') return null;
  return { autoJoinConfidence: c.autoJoinConfidence, caseOnMissingKey: c.caseOnMissingKey === true };
}

/** Read the connector's decisions (and, when it opted in, its open cases) for a page. */
export async function loadCorrelation(connectorId: string, config: unknown): Promise<CorrelationContext> {
  const settings = correlationSettings(config);
  const [decisions, openCases] = await Promise.all([listDecisions(connectorId), settings ? openCaseAnchors(connectorId) : new Map<string, string>()]);
  return { settings, decisions, openCases };
}

/** The decision the planner follows for an object, if any (a settled undo leaves none). */
export function decisionOf(corr: CorrelationContext | undefined, anchor: string): ManualDecision | undefined {
  const d = corr?.decisions.get(anchor);
  return d && d.mode !== 'none' ? d : undefined;
}

/** The mesh ids planning an object needs beyond its link: the decided one, the projection of a decided one, the scored candidates. */
export function correlationIds(
  rules: RuleSet,
  index: ScoringIndex,
  corr: CorrelationContext | undefined,
  object: ConnectorObject | null,
  anchor: string,
  keysOf: (jr: CompiledRule) => string[],
  page: object,
): string[] {
  if (!corr || !object) return [];
  const d = decisionOf(corr, anchor);
  if (d?.mode === 'join' && d.meshId) return [d.meshId];
  if (d?.mode === 'project') return [projectedMeshId(rules.connectorId, anchor)];
  if (d && d.mode !== 'rules') return [];
  if (!corr.settings) return [];
  return scoreCandidates(rules.joins, index, keysOf, page).candidates.map((c) => c.meshObjectId);
}

/**
 * Score and decide one object of a connector that opted in. `eligible`: a candidate the object may join (not
 * joined to another object of the same connector). Returns the outcome with the candidates as a case shows them.
 */
export function correlate(
  rules: RuleSet,
  index: ScoringIndex,
  settings: CorrelationSettings,
  keysOf: (jr: CompiledRule) => string[],
  eligible: (id: string) => boolean,
  page: object,
): CorrelationOutcome {
  const { candidates, noKey } = scoreCandidates(rules.joins, index, keysOf, page, { at: settings.autoJoinConfidence, eligible });
  return decideCorrelation(
    candidates.filter((c) => eligible(c.meshObjectId)),
    settings,
    noKey,
  );
}

/** A case as the planner drafts it for one object (the apply step writes it). */
export type CaseDraft = Pick<CorrelationCase, 'reason' | 'candidates' | 'object'>;

/** The candidates of a case as the case shows them (display name and anchor from the loaded mesh objects). */
export function caseDraft(
  rules: RuleSet,
  outcome: Extract<CorrelationOutcome, { kind: 'case' }>,
  object: ConnectorObject,
  doc: (id: string) => MeshObject | null,
): CaseDraft {
  const list = displayAttributes();
  const candidates: CaseCandidate[] = outcome.candidates.slice(0, 20).map((c) => {
    const d = doc(c.meshObjectId);
    const anchor = d?.anchorValue ?? '';
    const displayName = d ? displayNameOf(list, d, (n) => valueOf(d.attributes, n)) : c.meshObjectId;
    return { meshObjectId: c.meshObjectId, anchor, displayName, score: c.score, matched: c.matched };
  });
  const attributes: Record<string, AttributeValue> = {};
  for (const jr of rules.joins) {
    const name = jr.rule.sourceAttribute;
    // A secret attribute (a password a rule should not read anyway) is shown masked, as everywhere.
    if (name && object.attributes[name] !== undefined) attributes[name] = shownValue(name, object.attributes[name]);
  }
  const shownName = object.attributes.displayName ?? object.attributes.cn ?? object.attributes.name ?? null;
  return {
    reason: outcome.reason,
    candidates,
    object: {
      anchor: object.anchor,
      dn: object.dn ?? null,
      objectType: object.objectType,
      displayName: typeof shownName === 'string' && shownName ? shownName : Array.isArray(shownName) && shownName.length ? String(shownName[0]) : object.anchor,
      attributes,
    },
  };
}

function valueOf(attributes: MeshObject['attributes'], name: string): AttributeValue | undefined {
  if (attributes[name]) return attributes[name].value;
  const lower = name.toLowerCase();
  const key = Object.keys(attributes).find((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : attributes[key].value;
}

/** A case the rules settled: closed, with the mesh object the object joined (if any). */
export interface CaseClose {
  connectorId: string;
  caseId: string;
  meshObjectId: string | null;
  on: string;
}

/**
 * The case writes of a planned page: an open case per object the rules parked (keeping when it first opened),
 * and the open cases of objects settled now (joined, projected or left alone by the rules) closed. Objects an
 * operator decided are left to the decision (its API call writes the case).
 */
export function pageCases(
  connectorId: string,
  corr: CorrelationContext,
  planned: readonly { anchor: string; csObjectId?: string; meshId: string | null; deleted?: boolean; draft?: CaseDraft; decided?: boolean }[],
  now: string,
): { open: CorrelationCase[]; closed: CaseClose[] } {
  const open: CorrelationCase[] = [];
  const closed: CaseClose[] = [];
  for (const p of planned) {
    const id = csObjectIdOf(connectorId, { anchor: p.anchor, ...(p.csObjectId ? { csObjectId: p.csObjectId } : {}) });
    const openedOn = corr.openCases.get(p.anchor);
    if (p.draft) {
      open.push({
        caseId: id,
        connectorId,
        csObjectId: id,
        ...p.draft,
        state: 'open',
        decision: null,
        meshObjectId: null,
        decidedBy: null,
        decidedOn: null,
        openedOn: openedOn ?? now,
        updatedOn: now,
      });
      corr.openCases.set(p.anchor, openedOn ?? now);
    } else if (openedOn !== undefined && !p.decided) {
      closed.push({ connectorId, caseId: id, meshObjectId: p.deleted ? null : p.meshId, on: now });
      corr.openCases.delete(p.anchor);
    }
  }
  return { open, closed };
}
