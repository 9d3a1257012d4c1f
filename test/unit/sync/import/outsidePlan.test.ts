import type { ConnectorObject } from '../../../../lib/connectors/sdk';
import { MeshIndex } from '../../../../lib/mesh/joinIndex';
import { projectedMeshId, type MeshObject } from '../../../../lib/mesh/model';
import { planOutside, type OutsideObject } from '../../../../lib/sync/import/outsidePlan';
import { planImport, WorkingSet } from '../../../../lib/sync/planner';
import { compileRuleSet } from '../../../../lib/sync/rules';
import type { Rule } from '../../../../lib/storage/rules';
import { A, B, ruleBuilder } from '../syncSupport';

/**
 * The objects outside a plan being applied: those whose plan changes only the connector space are recorded,
 * the others left out; nothing is written to the page's mesh objects or to the index meanwhile.
 */

const r = ruleBuilder();
const RULES: Rule[] = [
  r({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId', objectType: 'User' }),
  r({ sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 }),
  r({ ruleType: 'JoinRule', connectorId: B, sourceAttribute: 'emp', targetAttribute: 'employeeId' }),
  r({ connectorId: B, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 80 }),
];
const NOW = '2026-02-01T00:00:00.000Z';
const LATER = '2026-02-02T00:00:00.000Z';
const obj = (anchor: string, attributes: ConnectorObject['attributes']): ConnectorObject => ({ anchor, objectType: 'User', attributes });

/** A mesh of two HR people, E1 joined to the target's `i1` (mail it@x), E2 not joined; a page that loaded both. */
function setup() {
  const index = new MeshIndex(new Set(['employeeId']));
  const a = compileRuleSet(A, RULES);
  const b = compileRuleSet(B, RULES);
  const build = new WorkingSet(index);
  planImport({ rules: a, now: NOW, ws: build }, 'h1', obj('h1', { employeeId: 'E1' }), 'x1', undefined);
  planImport({ rules: a, now: NOW, ws: build }, 'h2', obj('h2', { employeeId: 'E2' }), 'x2', undefined);
  const joined = planImport({ rules: b, now: NOW, ws: build }, 'i1', obj('i1', { emp: 'E1', mail: 'it@x' }), 'y1', undefined).cs;
  const e1 = projectedMeshId(A, 'h1');
  const e2 = projectedMeshId(A, 'h2');
  const ws = new WorkingSet(index);
  ws.load(
    new Map<string, MeshObject>([
      [e1, build.get(e1)!],
      [e2, build.get(e2)!],
    ]),
    [e1, e2],
  );
  return { index, b, ws, joined, e1, e2 };
}

const outside = (anchor: string, object: ConnectorObject | null, prev?: OutsideObject['prev']): OutsideObject => ({
  anchor,
  object,
  hash: object ? `h-${anchor}` : '',
  prev,
});

describe('planOutside', () => {
  test('a new account that joins nothing and a disconnector gone from the source are recorded; the page is left as it was', () => {
    const { index, b, ws, e2 } = setup();
    const gone = { anchor: 'i8', objectType: 'User', attributes: { emp: 'X8' }, hash: 'old', rulesHash: b.hash, meshId: null, updatedOn: NOW };
    const plans = planOutside({ rules: b, now: LATER }, ws, [outside('i9', obj('i9', { emp: 'X9' })), outside('i8', null, gone)]);
    expect([...plans.keys()]).toEqual([0, 1]);
    expect(plans.get(0)).toMatchObject({ outcome: 'created', cs: { anchor: 'i9', meshId: null, hash: 'h-i9', joinKeys: ['employeeId\u0000x9'] } });
    expect(plans.get(1)).toMatchObject({ outcome: 'deleted', cs: { anchor: 'i8', deleted: true, meshId: null } });
    expect(ws.dirty.size).toBe(0);
    expect(ws.get(e2)!.links).toEqual({ [A]: 'h2' });
    expect(index.find('employeeId', 'e2')).toEqual([e2]);
  });

  test('an account that would join, a joined one whose flowed value changes, and one that leaves its mesh object are left out', () => {
    const { b, ws, joined, e1, e2 } = setup();
    const plans = planOutside({ rules: b, now: LATER }, ws, [
      outside('i2', obj('i2', { emp: 'E2' })),
      outside('i1', obj('i1', { emp: 'E1', mail: 'new@x' }), joined),
      outside('i1', null, joined),
    ]);
    expect(plans.size).toBe(0);
    // Nothing of what they would have changed reached the page or the index.
    expect(ws.dirty.size).toBe(0);
    expect(ws.get(e2)!.links).toEqual({ [A]: 'h2' });
    expect(ws.get(e1)!.links).toEqual({ [A]: 'h1', [B]: 'i1' });
    expect(ws.get(e1)!.attributes.mail?.value).toBe('it@x');
  });

  test('a joined account changed only in values no rule flows is recorded (a connector-space refresh), still joined', () => {
    const { b, ws, joined, e1 } = setup();
    const plans = planOutside({ rules: b, now: LATER }, ws, [outside('i1', obj('i1', { emp: 'E1', mail: 'it@x', phone: '555' }), joined)]);
    expect(plans.get(0)).toMatchObject({ outcome: 'updated', cs: { anchor: 'i1', meshId: e1, attributes: { phone: '555' } } });
    expect(ws.dirty.size).toBe(0);
  });

  test('a left-out object does not change what the next is planned on: a second account of the same person still would join', () => {
    const { b, ws } = setup();
    // Planned on the first's join, the second would find E2 taken and look like a disconnector: it is left out too.
    const plans = planOutside({ rules: b, now: LATER }, ws, [outside('i2', obj('i2', { emp: 'E2' })), outside('i3', obj('i3', { emp: 'E2' }))]);
    expect(plans.size).toBe(0);
  });
});
