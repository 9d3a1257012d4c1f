import type { ConnectorObject } from '../../../../lib/connectors/sdk';
import { MeshIndex } from '../../../../lib/mesh/joinIndex';
import { projectedMeshId } from '../../../../lib/mesh/model';
import type { CorrelationContext } from '../../../../lib/sync/correlation/plan';
import { pageCases } from '../../../../lib/sync/correlation/plan';
import { planImport, WorkingSet } from '../../../../lib/sync/planner';
import { compileRuleSet } from '../../../../lib/sync/rules';
import type { Rule } from '../../../../lib/storage/rules';
import { A, B, ruleBuilder } from '../syncSupport';

/** Correlation in the planner: scoring, cases instead of joins, operators' decisions and their undo. */

const r = ruleBuilder();
const RULES: Rule[] = [
  r({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId', objectType: 'User' }),
  r({ sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 }),
  r({ sourceAttribute: 'displayName', targetAttribute: 'displayName', confidence: 50 }),
  r({ ruleType: 'JoinRule', connectorId: B, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId', confidence: 100 }),
  r({ ruleType: 'JoinRule', connectorId: B, sourceAttribute: 'displayName', targetAttribute: 'displayName', confidence: 60, match: 'fuzzy' }),
  r({ connectorId: B, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 80 }),
];
const NOW = '2026-02-01T00:00:00.000Z';
const obj = (anchor: string, attributes: ConnectorObject['attributes']): ConnectorObject => ({ anchor, objectType: 'User', attributes });

function setup(settings: CorrelationContext['settings'] = { autoJoinConfidence: 80, caseOnMissingKey: true }) {
  const ws = new WorkingSet(new MeshIndex(new Set(['employeeId', 'displayName'])));
  const a = compileRuleSet(A, RULES);
  const b = compileRuleSet(B, RULES);
  for (const [anchor, id, name] of [
    ['h1', 'E1', 'Anna Schmidt'],
    ['h2', 'E2', 'Anna Schmidt'],
    ['h3', 'E3', 'Jonathan Smith'],
  ])
    planImport({ rules: a, now: NOW, ws }, anchor, obj(anchor, { employeeId: id, displayName: name }), 'x', undefined);
  const corr: CorrelationContext = { settings, decisions: new Map(), openCases: new Map() };
  const plan = (anchor: string, attributes: ConnectorObject['attributes'], prev?: Parameters<typeof planImport>[4]) =>
    planImport({ rules: b, now: NOW, ws, correlation: corr }, anchor, obj(anchor, attributes), 'y', prev);
  return { ws, corr, plan, m: (hr: string) => projectedMeshId(A, hr) };
}

describe('planImport with correlation', () => {
  test('a key and a matching name join; a twin name without a key, and a name alone, are cases; nothing is projected', () => {
    const { plan, m, ws } = setup();
    expect(plan('d1', { employeeNumber: 'E1', displayName: 'Anna Schmidt', mail: 'a@x' }).cs.meshId).toBe(m('h1'));
    expect(ws.get(m('h1'))!.attributes.mail?.value).toBe('a@x');
    const twin = plan('d2', { displayName: 'Anna Schmidt' });
    expect(twin.cs).toMatchObject({ meshId: null });
    expect(twin.cs.joinKeys?.length).toBeGreaterThan(0);
    // h1 is taken by d1 (one object per connector on a mesh object): only h2 stays a candidate, and no key.
    expect(twin.correlation?.case).toMatchObject({ reason: 'noKey', object: { anchor: 'd2', displayName: 'Anna Schmidt' } });
    expect(twin.correlation!.case!.candidates.map((c) => c.meshObjectId)).toEqual([m('h2')]);
    const typo = plan('d3', { displayName: 'Jonathon Smith' });
    expect(typo.correlation?.case).toMatchObject({ reason: 'noKey' });
    expect(typo.correlation!.case!.candidates[0]).toMatchObject({ meshObjectId: m('h3'), anchor: 'E3' });
    expect(typo.correlation!.case!.candidates[0].matched[0].how).toBe('fuzzy');
    const below = plan('d4', { employeeNumber: 'E9', displayName: 'Jonathan Smith' });
    expect(below.correlation?.case).toMatchObject({ reason: 'belowThreshold' });
    expect(plan('d5', { displayName: 'Nobody Known' }).correlation?.case).toMatchObject({ reason: 'noKey', candidates: [] });
    expect(plan('d6', { employeeNumber: 'E7', displayName: 'Nobody Known' }).correlation).toBeUndefined();
  });

  test('without correlation settings the join rules work as before (exact, several candidates an error)', () => {
    const { plan } = setup(null);
    const p = plan('d2', { employeeNumber: 'E404', displayName: 'anna schmidt' });
    expect(p.outcome).toBe('error');
    expect(p.error).toMatch(/matched 2 mesh objects/);
    expect(p.correlation).toBeUndefined();
  });

  test('decisions: join by hand, ignore (the object leaves its mesh object), project, and an undo lets the rules decide', () => {
    const { plan, m, corr, ws } = setup();
    const dec = (anchor: string, mode: 'join' | 'project' | 'ignore' | 'rules', meshId?: string) =>
      corr.decisions.set(anchor, { anchor, mode, ...(meshId ? { meshId } : {}), by: 'op', on: NOW, log: [] });
    dec('d2', 'join', m('h2'));
    const joined = plan('d2', { displayName: 'Anna Schmidt', mail: 'twin@x' });
    expect(joined.cs.meshId).toBe(m('h2'));
    expect(joined.correlation).toEqual({ decided: true });
    expect(ws.get(m('h2'))!.links[B]).toBe('d2');
    dec('d2', 'ignore');
    const ignored = plan('d2', { displayName: 'Anna Schmidt', mail: 'twin@x' }, joined.cs);
    expect(ignored.cs.meshId).toBeNull();
    expect(ignored.cs.joinKeys).toBeUndefined();
    expect(ws.get(m('h2'))!.links[B]).toBeUndefined();
    expect(ws.get(m('h2'))!.attributes.mail).toBeUndefined();
    dec('d2', 'project');
    const projected = plan('d2', { displayName: 'Anna Schmidt' }, ignored.cs);
    expect(projected.cs.meshId).toBe(projectedMeshId(B, 'd2'));
    expect(projected.join?.outcome).toBe('projected');
    dec('d2', 'rules');
    const undone = plan('d2', { displayName: 'Anna Schmidt' }, projected.cs);
    expect(undone.correlation).toMatchObject({ undone: true, case: { reason: 'severalCandidates' } });
    expect(undone.cs.meshId).toBeNull();
    // The projected object had no other connector: it went with the undo.
    expect(ws.get(projectedMeshId(B, 'd2'))).toBeNull();
  });

  test('a join decision to a mesh object another object of the connector holds is an error, nothing joined', () => {
    const { plan, m, corr } = setup();
    plan('d1', { employeeNumber: 'E1', displayName: 'Anna Schmidt' });
    corr.decisions.set('d9', { anchor: 'd9', mode: 'join', meshId: m('h1'), by: 'op', on: NOW, log: [] });
    const p = plan('d9', { displayName: 'X' });
    expect(p.outcome).toBe('error');
    expect(p.error).toMatch(/joined to another object of this connector/);
  });
});

describe('pageCases', () => {
  test('opens a case per parked object (keeping when it opened) and closes those the rules settled', () => {
    const corr: CorrelationContext = {
      settings: { autoJoinConfidence: 80, caseOnMissingKey: false },
      decisions: new Map(),
      openCases: new Map([['d1', '2026-01-01T00:00:00.000Z']]),
    };
    const draft = { reason: 'noKey' as const, candidates: [], object: { anchor: 'd2', dn: null, objectType: 'User', displayName: 'd2', attributes: {} } };
    const { open, closed } = pageCases(
      B,
      corr,
      [
        { anchor: 'd1', meshId: 'm1' },
        { anchor: 'd2', meshId: null, draft },
        { anchor: 'd3', meshId: null },
      ],
      NOW,
    );
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ state: 'open', openedOn: NOW, reason: 'noKey' });
    expect(closed).toEqual([{ connectorId: B, caseId: expect.any(String), meshObjectId: 'm1', on: NOW }]);
    expect(corr.openCases.has('d1')).toBe(false);
    expect(corr.openCases.get('d2')).toBe(NOW);
  });
});
