import type { ConnectorObject } from '../../../../lib/connectors/sdk';
import { MeshIndex } from '../../../../lib/mesh/joinIndex';
import { cloneMeshObject, projectedMeshId } from '../../../../lib/mesh/model';
import { compose, planImport, WorkingSet } from '../../../../lib/sync/planner';
import { compileRuleSet, RuleEvaluationError } from '../../../../lib/sync/rules';
import { basisOf, poolOf, uniqueRulesOf } from '../../../../lib/sync/unique/candidates';
import type { Rule } from '../../../../lib/storage/rules';
import type { UniqueRule } from '../../../../lib/storage/uniqueValues';
import { A, ruleBuilder } from '../syncSupport';

/**
 * The pure part of a unique computed attribute (docs/unique-values.md): planning proposes the value the object
 * holds (keepOnRename), else its first candidate's value; the reserve step's value (`assigned`) replaces the
 * proposal, and later computed attributes see it. Reservation itself is tested against storage (integration).
 */
const r = ruleBuilder();
const NOW = '2026-02-01T00:00:00.000Z';
const LATER = '2026-03-01T00:00:00.000Z';
const unique = (over: Partial<UniqueRule> = {}): UniqueRule => ({
  candidates: ['object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase()', 'object.givenName.toLowerCase() + "." + object.sn.toLowerCase()'],
  scope: 'mesh',
  meshAttribute: 'uid',
  counter: { from: 2, to: 99 },
  caseSensitive: false,
  keepOnRename: true,
  quarantineDays: 90,
  ...over,
});
const rules = (u: UniqueRule): Rule[] => [
  r({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId', objectType: 'User' }),
  r({ sourceAttribute: 'givenName', targetAttribute: 'givenName', confidence: 50 }),
  r({ sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 }),
  r({ ruleType: 'MeshComposerRule', connectorId: null, targetAttribute: 'uid', unique: u }),
  // A later computed attribute that reads the unique one.
  r({ ruleType: 'MeshComposerRule', connectorId: null, priority: 200, targetAttribute: 'mail', transformScript: 'source.uid + "@example.test"' }),
];
const obj = (anchor: string, attributes: ConnectorObject['attributes']): ConnectorObject => ({ anchor, objectType: 'User', attributes });
const UID_RULE = (set: Rule[]) => set.find((x) => x.targetAttribute === 'uid')!.ruleId;

function project(u: UniqueRule) {
  const all = rules(u);
  const set = compileRuleSet(A, all);
  const ws = new WorkingSet(new MeshIndex(new Set()));
  planImport({ rules: set, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1', givenName: 'John', sn: 'Smith' }), 'x', undefined);
  return { all, set, ws, id: projectedMeshId(A, 'h1') };
}

test('a new object is proposed its first candidate; later computed attributes see it', () => {
  const { ws, id } = project(unique());
  const doc = ws.get(id)!;
  expect(doc.attributes.uid).toMatchObject({ value: 'jsmith', sourceConnectorId: null });
  expect(doc.attributes.mail.value).toBe('jsmith@example.test');
});

test('the reserve step value replaces the proposal, and the attributes computed after it follow', () => {
  const { all, set, ws, id } = project(unique());
  const doc = cloneMeshObject(ws.get(id)!);
  compose(doc, set, ws.index, NOW, undefined, undefined, new Map([[UID_RULE(all), 'john.smith']]));
  expect(doc.attributes.uid.value).toBe('john.smith');
  expect(doc.attributes.mail.value).toBe('john.smith@example.test');
});

test('kept for life: a rename keeps the value it holds (keepOnRename), unless keepOnRename is false', () => {
  for (const keepOnRename of [true, false]) {
    const { all, set, ws, id } = project(unique({ keepOnRename }));
    const held = cloneMeshObject(ws.get(id)!);
    compose(held, set, ws.index, NOW, undefined, undefined, new Map([[UID_RULE(all), 'john.smith']]));
    ws.put(held);
    const renamed = planImport({ rules: set, now: LATER, ws }, 'h1', obj('h1', { employeeId: 'E1', givenName: 'John', sn: 'Stone' }), 'y', {
      anchor: 'h1',
      objectType: 'User',
      attributes: {},
      hash: 'x',
      rulesHash: set.hash,
      meshId: id,
      updatedOn: NOW,
    });
    expect(renamed.outcome).toBe('updated');
    // keepOnRename false: the new first candidate is proposed (the reserve step chooses and releases the old one).
    expect(ws.get(id)!.attributes.uid.value).toBe(keepOnRename ? 'john.smith' : 'jstone');
  }
});

test('no candidate gives a value: no value (as a computed attribute whose script gives none)', () => {
  const all = rules(unique());
  const set = compileRuleSet(A, all);
  const ws = new WorkingSet(new MeshIndex(new Set()));
  planImport({ rules: set, now: NOW, ws }, 'h2', obj('h2', { employeeId: 'E2', givenName: 'Cher' }), 'x', undefined);
  expect(ws.get(projectedMeshId(A, 'h2'))!.attributes.uid).toBeUndefined();
});

test('revert puts a held object back as it was before the page: a new one leaves the page and the index', () => {
  const { ws, id } = project(unique());
  expect(ws.dirty.has(id)).toBe(true);
  ws.revert(id);
  expect(ws.get(id)).toBeNull();
  expect(ws.dirty.has(id)).toBe(false);
  expect(ws.index.info(id)).toBeUndefined();
});

test('a candidate that fails gives no value for a computed attribute (a group has no givenName), an error for an outbound flow', () => {
  const all = rules(unique());
  const computed = compileRuleSet(A, all).composers.find((cr) => cr.rule.unique)!;
  const group = { cn: 'Admins' };
  expect(basisOf(uniqueRulesOf([computed])[0], { source: group, object: group, related: {} })).toBe('');
  const flow = { ...computed, rule: { ...computed.rule, ruleType: 'FlowRule' as const, direction: 'outbound' as const, connectorId: A } };
  expect(() => basisOf(uniqueRulesOf([flow])[0], { source: null, object: group, related: {} })).toThrow(RuleEvaluationError);
});

test('a computed attribute and an outbound flow of scope mesh on the same attribute share one pool', () => {
  const computed = rules(unique()).find((x) => x.unique)!;
  const flow = { ...computed, ruleType: 'FlowRule' as const, direction: 'outbound' as const, connectorId: A, targetAttribute: 'sAMAccountName' };
  expect(poolOf(computed, computed.unique!)).toBe('mesh/uid');
  expect(poolOf(flow, { ...computed.unique!, meshAttribute: 'uid' })).toBe('mesh/uid');
});
