import type { ConnectorObject } from '../../../../lib/connectors/sdk';
import { MeshIndex } from '../../../../lib/mesh/joinIndex';
import { IndexOverlay } from '../../../../lib/mesh/indexOverlay';
import { projectedMeshId, type MeshObject } from '../../../../lib/mesh/model';
import { anchoredCsObjectId, stagedCsObjectId } from '../../../../lib/sync/space/csIds';
import { exportView, meshChanges } from '../../../../lib/sync/run/oneObject';
import { planImport, WorkingSet } from '../../../../lib/sync/planner';
import { compileRuleSet } from '../../../../lib/sync/rules';
import { A, B, ruleBuilder } from '../syncSupport';

/** The pure parts of the one-object preview: the planner's join decision, the private index layer, the views. */

const T = '00000000-0000-4000-8000-00000000000c';
const r = ruleBuilder();
const PROJECT = r({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId', objectType: 'User' });
const FLOW = r({ sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 });
const JOIN = r({ ruleType: 'JoinRule', connectorId: B, sourceAttribute: 'emp', targetAttribute: 'employeeId' });
const RULES = [PROJECT, FLOW, JOIN, r({ connectorId: B, sourceAttribute: 'title', targetAttribute: 'title', confidence: 80 })];
const NOW = '2026-02-01T00:00:00.000Z';
const obj = (anchor: string, attributes: ConnectorObject['attributes']): ConnectorObject => ({ anchor, objectType: 'User', attributes });

function project(ws: WorkingSet, anchor: string, employeeId: string): MeshObject {
  planImport({ rules: compileRuleSet(A, RULES), now: NOW, ws }, anchor, obj(anchor, { employeeId }), 'h', undefined);
  return ws.get(projectedMeshId(A, anchor))!;
}

describe('the planner records its join decision', () => {
  test('projected, joined by a rule, linked already, none, ambiguous', () => {
    const index = new MeshIndex(new Set(['employeeId']));
    const ws = new WorkingSet(index);
    const a = compileRuleSet(A, RULES);
    const b = compileRuleSet(B, RULES);
    const p = planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1' }), 'h', undefined);
    expect(p.join).toEqual({ outcome: 'projected', ruleId: PROJECT.ruleId, candidates: [] });
    const again = planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1' }), 'h', p.cs);
    expect(again.join).toEqual({ outcome: 'joined', ruleId: null, candidates: [p.cs.meshId] });
    const joined = planImport({ rules: b, now: NOW, ws }, 'd1', obj('d1', { emp: 'E1' }), 'h', undefined);
    expect(joined.join).toEqual({ outcome: 'joined', ruleId: JOIN.ruleId, candidates: [p.cs.meshId] });
    expect(planImport({ rules: b, now: NOW, ws }, 'd9', obj('d9', { emp: 'E9' }), 'h', undefined).join).toEqual({
      outcome: 'none',
      ruleId: null,
      candidates: [],
    });
    project(ws, 'h2', 'E5');
    project(ws, 'h3', 'E5');
    const amb = planImport({ rules: b, now: NOW, ws }, 'd5', obj('d5', { emp: 'E5' }), 'h', undefined);
    expect(amb.outcome).toBe('error');
    expect(amb.join).toEqual({ outcome: 'ambiguous', ruleId: JOIN.ruleId, candidates: [projectedMeshId(A, 'h2'), projectedMeshId(A, 'h3')].sort() });
  });
});

describe('IndexOverlay', () => {
  test('planning through it answers as if applied, and leaves the shared index as it was', () => {
    const base = new MeshIndex(new Set(['employeeId']));
    const stored = project(new WorkingSet(base), 'h1', 'E1');
    const overlay = new IndexOverlay(base);
    const ws = new WorkingSet(overlay);
    ws.load(new Map([[stored.id, stored]]), [stored.id]);
    const fresh = project(ws, 'h2', 'E2');
    // A changed object: its new keys found, its old ones not.
    const changed = { ...structuredClone(stored), anchorValue: 'X1' };
    overlay.apply(stored.id, changed);
    expect(overlay.find(undefined, 'e2')).toEqual([fresh.id]);
    expect(overlay.find(undefined, 'x1')).toEqual([stored.id]);
    expect(overlay.find(undefined, 'e1')).toEqual([]);
    expect(overlay.info(stored.id)?.anchorValue).toBe('X1');
    overlay.apply(fresh.id, null);
    expect(overlay.info(fresh.id)).toBeUndefined();
    // The shared index: untouched.
    expect(base.size).toBe(1);
    expect(base.find(undefined, 'e1')).toEqual([stored.id]);
    expect(base.find(undefined, 'e2')).toEqual([]);
    expect(base.info(stored.id)?.anchorValue).toBe('E1');
  });
});

describe('views', () => {
  test('meshChanges: attribute-level old and new with the winning rule; unchanged left out, secrets masked', () => {
    const ws = new WorkingSet(new MeshIndex(new Set()));
    const before = project(ws, 'h1', 'E1');
    const after = structuredClone(before);
    after.attributes.title = { value: 'Engineer', sourceConnectorId: B, confidence: 80, updatedOn: NOW };
    after.contributions.title = [{ c: B, r: 'rule-title', conf: 80, pri: 100, v: 'Engineer', at: NOW }];
    after.attributes.unicodePwd = { value: 'secret', sourceConnectorId: B, confidence: 80, updatedOn: NOW };
    after.contributions.unicodePwd = [{ c: B, r: 'rule-pwd', conf: 80, pri: 100, v: 'secret', at: NOW }];
    expect(meshChanges(before, after)).toEqual([
      { attribute: 'title', old: null, new: 'Engineer', ruleId: 'rule-title' },
      { attribute: 'unicodePwd', old: null, new: '********', ruleId: 'rule-pwd' },
    ]);
    expect(meshChanges(null, before)).toEqual([{ attribute: 'employeeId', old: null, new: 'E1', ruleId: FLOW.ruleId }]);
    expect(meshChanges(before, null)).toEqual([{ attribute: 'employeeId', old: 'E1', new: null, ruleId: FLOW.ruleId }]);
  });

  test('exportView: an add has no old values and its staged id; an update shows what the target shows now', () => {
    const add = exportView({
      connectorId: T,
      kind: 'add',
      operation: 'Add',
      meshId: 'm1',
      prev: undefined,
      dn: 'uid=E1,ou=x',
      values: { uid: 'E1' },
      shown: {},
    });
    expect(add).toEqual({
      connectorId: T,
      operation: 'Add',
      csObjectId: stagedCsObjectId(T, 'm1'),
      dn: 'uid=E1,ou=x',
      attributes: { uid: { old: null, new: 'E1' } },
    });
    const prev = { anchor: 'a1', objectType: 'User', attributes: { title: 'Old' }, hash: '', rulesHash: '', meshId: 'm1', updatedOn: NOW };
    const upd = exportView({
      connectorId: T,
      kind: 'update',
      operation: 'Update',
      meshId: 'm1',
      prev,
      dn: null,
      values: { title: 'New', mail: 'a@x' },
      shown: { title: 'Old' },
    });
    expect(upd).toEqual({
      connectorId: T,
      operation: 'Update',
      csObjectId: anchoredCsObjectId(T, 'a1'),
      dn: null,
      attributes: { title: { old: 'Old', new: 'New' }, mail: { old: null, new: 'a@x' } },
    });
  });
});
