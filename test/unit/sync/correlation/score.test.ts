import { MeshIndex } from '../../../../lib/mesh/joinIndex';
import type { MeshObject } from '../../../../lib/mesh/model';
import { decideCorrelation, scoreCandidates, type ScoredCandidate } from '../../../../lib/sync/correlation/score';
import { joinKeys } from '../../../../lib/sync/planner';
import { compileRuleSet } from '../../../../lib/sync/rules';
import { A, B, ruleBuilder } from '../syncSupport';

const r = ruleBuilder(B);
const NOW = '2026-02-01T00:00:00.000Z';

function person(id: string, employeeId: string | null, displayName: string): MeshObject {
  const attributes: MeshObject['attributes'] = { displayName: { value: displayName, sourceConnectorId: A, confidence: 50, updatedOn: NOW } };
  if (employeeId) attributes.employeeId = { value: employeeId, sourceConnectorId: A, confidence: 50, updatedOn: NOW };
  return {
    id,
    objectType: 'User',
    anchorValue: employeeId ?? id,
    createdOn: NOW,
    updatedOn: NOW,
    attributes,
    contributions: {},
    links: { [A]: id },
    relationships: [],
    pendingReferences: [],
  };
}

function setup() {
  const index = new MeshIndex(new Set(['employeeId', 'displayName']));
  for (const p of [
    person('m1', 'E1', 'José García'),
    person('m2', 'E2', 'Anna Schmidt'),
    person('m3', 'E3', 'Anna Schmidt'),
    person('m4', 'E4', 'Jonathan Smith'),
  ])
    index.apply(p.id, p);
  const rules = compileRuleSet(B, [
    r({ ruleType: 'JoinRule', sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId', confidence: 100 }),
    r({ ruleType: 'JoinRule', sourceAttribute: 'displayName', targetAttribute: 'displayName', confidence: 60, match: 'fuzzy', fuzzyThreshold: 0.9 }),
  ]);
  const score = (attributes: Record<string, string>) => scoreCandidates(rules.joins, index, (jr) => joinKeys(jr, { attributes }), {});
  return { index, rules, score };
}

describe('scoreCandidates', () => {
  test('an exact key and a name add up; the name twin gets the name only', () => {
    const { score } = setup();
    const { candidates, noKey } = score({ employeeNumber: 'e2', displayName: 'Anna Schmidt' });
    expect(noKey).toBe(false);
    expect(candidates.map((c) => [c.meshObjectId, c.score])).toEqual([
      ['m2', 160],
      ['m3', 60],
    ]);
    expect(candidates[0].matched.map((m) => m.how)).toEqual(['exact', 'exact']);
  });

  test('normalised: case, accents and blanks; fuzzy: a typo above the threshold, with points times the similarity', () => {
    const { score } = setup();
    const norm = score({ displayName: '  jose  GARCIA ' });
    expect(norm.noKey).toBe(true);
    expect(norm.candidates).toHaveLength(1);
    expect(norm.candidates[0]).toMatchObject({ meshObjectId: 'm1', score: 60 });
    expect(norm.candidates[0].matched[0]).toMatchObject({ how: 'normalized', similarity: 1, sourceAttribute: 'displayName', targetAttribute: 'displayName' });
    const fuzzy = score({ displayName: 'Jonathon Smith' });
    expect(fuzzy.candidates.map((c) => c.meshObjectId)).toEqual(['m4']);
    const m = fuzzy.candidates[0].matched[0];
    expect(m.how).toBe('fuzzy');
    expect(m.similarity).toBeGreaterThan(0.9);
    expect(m.similarity).toBeLessThan(1);
    expect(fuzzy.candidates[0].score).toBe(Math.round(60 * m.similarity));
    expect(score({ displayName: 'Peter Miller' }).candidates).toEqual([]);
  });

  test('with a sure candidate no other can catch up with, scoring stops before the name rules (the decision is the same)', () => {
    const { rules, index } = setup();
    const attributes = { employeeNumber: 'E2', displayName: 'Anna Schmidt' };
    const keysOf = (jr: Parameters<typeof joinKeys>[0]) => joinKeys(jr, { attributes });
    const early = scoreCandidates(rules.joins, index, keysOf, {}, { at: 80, eligible: () => true });
    expect(early).toMatchObject({ early: true, candidates: [{ meshObjectId: 'm2', score: 100 }] });
    // 60 more points could lift the twin to 80: with a threshold of 50 the name rule still runs.
    expect(scoreCandidates(rules.joins, index, keysOf, {}, { at: 50, eligible: () => true }).early).toBeUndefined();
    // The sure candidate is not eligible (joined elsewhere): no early stop.
    expect(scoreCandidates(rules.joins, index, keysOf, {}, { at: 80, eligible: (id) => id !== 'm2' }).early).toBeUndefined();
    const settings = { autoJoinConfidence: 80, caseOnMissingKey: false };
    const full = scoreCandidates(rules.joins, index, keysOf, {});
    expect(decideCorrelation(early.candidates, settings, early.noKey)).toMatchObject({ kind: 'join', candidate: { meshObjectId: 'm2' } });
    expect(decideCorrelation(full.candidates, settings, full.noKey)).toMatchObject({ kind: 'join', candidate: { meshObjectId: 'm2' } });
  });

  test('the name index follows the join index: a later value is found once the index changed', () => {
    const { index, score } = setup();
    expect(score({ displayName: 'Zoë Adams' }).candidates).toEqual([]);
    index.apply('m5', person('m5', 'E5', 'Zoe Adams'));
    expect(score({ displayName: 'Zoë Adams' }).candidates.map((c) => c.meshObjectId)).toEqual(['m5']);
  });
});

describe('decideCorrelation', () => {
  const c = (id: string, score: number): ScoredCandidate => ({ meshObjectId: id, score, matched: [] });
  const settings = { autoJoinConfidence: 80, caseOnMissingKey: true };
  test('one sure candidate joins, whatever the others', () => {
    expect(decideCorrelation([c('a', 160), c('b', 60)], settings, false)).toMatchObject({ kind: 'join', candidate: { meshObjectId: 'a' } });
  });
  test('cases: several sure, several below, one below (no key / a key), none without a key', () => {
    expect(decideCorrelation([c('a', 100), c('b', 100)], settings, false)).toMatchObject({ kind: 'case', reason: 'severalCandidates' });
    expect(decideCorrelation([c('a', 60), c('b', 60)], settings, true)).toMatchObject({ kind: 'case', reason: 'severalCandidates' });
    expect(decideCorrelation([c('a', 60)], settings, true)).toMatchObject({ kind: 'case', reason: 'noKey' });
    expect(decideCorrelation([c('a', 60)], settings, false)).toMatchObject({ kind: 'case', reason: 'belowThreshold' });
    expect(decideCorrelation([], settings, true)).toEqual({ kind: 'case', reason: 'noKey', candidates: [] });
  });
  test('nothing: no candidate with a key, or without one when caseOnMissingKey is off', () => {
    expect(decideCorrelation([], settings, false)).toEqual({ kind: 'none' });
    expect(decideCorrelation([], { ...settings, caseOnMissingKey: false }, true)).toEqual({ kind: 'none' });
  });
});
