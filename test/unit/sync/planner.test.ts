import type { ConnectorObject } from '../../../lib/connectors/sdk';
import { MeshIndex } from '../../../lib/mesh/joinIndex';
import { projectedMeshId, type Contribution, type MeshObject } from '../../../lib/mesh/model';
import { identityKeys, planImport, reresolve, winner, WorkingSet } from '../../../lib/sync/planner';
import { referencePolicy, type CsLookup } from '../../../lib/sync/references';
import { compileRuleSet } from '../../../lib/sync/rules';
import { exceeded, thresholdsOf } from '../../../lib/plans/thresholds';
import type { Rule } from '../../../lib/storage/rules';
import { A, B, ruleBuilder } from './syncSupport';

/** The pure import planning: join, projection, flow precedence, composer, relationships, deletes. */

const r = ruleBuilder();

const RULES: Rule[] = [
  r({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId', objectType: 'User' }),
  r({ sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 }),
  r({ sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 50 }),
  r({ sourceAttribute: 'managerId', targetAttribute: 'managerId', confidence: 50 }),
  r({ ruleType: 'JoinRule', connectorId: B, sourceAttribute: 'emp', targetAttribute: 'employeeId', transformScript: 'source.toUpperCase()' }),
  r({ connectorId: B, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 80 }),
  r({ ruleType: 'MeshComposerRule', connectorId: null, targetAttribute: 'upperMail', transformScript: 'source.mail.toUpperCase()' }),
  r({ ruleType: 'MeshComposerRule', connectorId: null, relationshipType: 'manager', sourceAttribute: 'managerId', targetAttribute: 'employeeId' }),
];

const obj = (anchor: string, attributes: ConnectorObject['attributes']): ConnectorObject => ({ anchor, objectType: 'User', attributes });
const NOW = '2026-02-01T00:00:00.000Z';

function setup() {
  const index = new MeshIndex(new Set(['employeeId']));
  const ws = new WorkingSet(index);
  return { index, ws, a: compileRuleSet(A, RULES), b: compileRuleSet(B, RULES) };
}

describe('planImport', () => {
  test('projects an object that joins nothing, with a deterministic id, flows and computed attributes', () => {
    const { ws, a } = setup();
    const plan = planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1', mail: 'a@x' }), 'hash1', undefined);
    expect(plan.outcome).toBe('created');
    const id = projectedMeshId(A, 'h1');
    expect(plan.cs).toMatchObject({ anchor: 'h1', meshId: id, hash: 'hash1', rulesHash: a.hash });
    const doc = ws.get(id)!;
    expect(doc).toMatchObject({ objectType: 'User', anchorValue: 'E1', links: { [A]: 'h1' } });
    expect(doc.attributes.mail).toEqual({ value: 'a@x', sourceConnectorId: A, confidence: 50, updatedOn: NOW });
    expect(doc.attributes.upperMail).toMatchObject({ value: 'A@X', sourceConnectorId: null });
    expect(projectedMeshId(A, 'h1')).toBe(id);
  });

  test('joins through the index; the higher confidence wins; deleting the winner recalls its value', () => {
    const { ws, a, b } = setup();
    planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1', mail: 'hr@x' }), 'x', undefined);
    const join = planImport({ rules: b, now: NOW, ws }, 'i1', obj('i1', { emp: 'e1', mail: 'it@x' }), 'y', undefined);
    const id = projectedMeshId(A, 'h1');
    expect(join.cs.meshId).toBe(id);
    expect(ws.get(id)!.attributes.mail).toMatchObject({ value: 'it@x', sourceConnectorId: B, confidence: 80 });
    const del = planImport({ rules: b, now: NOW, ws }, 'i1', null, '', join.cs);
    expect(del.outcome).toBe('deleted');
    expect(del.cs).toMatchObject({ deleted: true, meshId: null });
    expect(ws.get(id)!.attributes.mail).toMatchObject({ value: 'hr@x', sourceConnectorId: A });
    expect(ws.get(id)!.links).toEqual({ [A]: 'h1' });
  });

  test('several join candidates: no join and an error naming them', () => {
    const { ws, a, b } = setup();
    planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1' }), 'x', undefined);
    const other = compileRuleSet('00000000-0000-4000-8000-0000000000cc', [
      r({ connectorId: '00000000-0000-4000-8000-0000000000cc', ruleType: 'ProjectionRule', sourceAttribute: 'k' }),
      r({ connectorId: '00000000-0000-4000-8000-0000000000cc', sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 1 }),
    ]);
    planImport({ rules: other, now: NOW, ws }, 'z', obj('z', { k: 'Z', employeeId: 'E1' }), 'x', undefined);
    const plan = planImport({ rules: b, now: NOW, ws }, 'i1', obj('i1', { emp: 'E1' }), 'y', undefined);
    expect(plan.outcome).toBe('error');
    expect(plan.error).toMatch(/matched 2 mesh objects/);
    expect(plan.error).toContain(projectedMeshId(A, 'h1'));
    expect(plan.cs).toMatchObject({ meshId: null, hash: '' });
  });

  test('the last connector leaving deletes the object; a reference to it becomes pending again', () => {
    const { ws, a } = setup();
    const boss = planImport({ rules: a, now: NOW, ws }, 'h0', obj('h0', { employeeId: 'E0' }), 'x', undefined);
    planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1', managerId: 'E0' }), 'x', undefined);
    const e1 = projectedMeshId(A, 'h1');
    expect(ws.get(e1)!.relationships).toEqual([{ type: 'manager', targetId: boss.cs.meshId, targetAnchor: 'E0', targetType: 'User' }]);
    const del = planImport({ rules: a, now: NOW, ws }, 'h0', null, '', boss.cs);
    expect(ws.get(boss.cs.meshId!)).toBeNull();
    expect(del.followUps).toEqual([e1]);
    reresolve(ws, a, del.followUps, NOW);
    expect(ws.get(e1)!.relationships).toEqual([]);
    expect(ws.get(e1)!.pendingReferences).toEqual([{ type: 'manager', value: 'E0', by: 'employeeId' }]);
  });

  test('a reference that names several mesh objects makes no relationship and is a per-object error naming them', () => {
    const { ws, a } = setup();
    planImport({ rules: a, now: NOW, ws }, 'h0', obj('h0', { employeeId: 'E0' }), 'x', undefined);
    const other = compileRuleSet('00000000-0000-4000-8000-0000000000cc', [
      r({ connectorId: '00000000-0000-4000-8000-0000000000cc', ruleType: 'ProjectionRule', sourceAttribute: 'k' }),
      r({ connectorId: '00000000-0000-4000-8000-0000000000cc', sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 1 }),
    ]);
    planImport({ rules: other, now: NOW, ws }, 'z', obj('z', { k: 'Z', employeeId: 'E0' }), 'x', undefined);
    const plan = planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1', managerId: 'E0' }), 'x', undefined);
    expect(plan.outcome).toBe('created');
    expect(plan.error).toMatch(/The manager reference 'E0' matched 2 mesh objects/);
    expect(plan.error).toContain(projectedMeshId(A, 'h0'));
    expect(plan.cs).toMatchObject({ hash: 'x', error: plan.error });
    const doc = ws.get(projectedMeshId(A, 'h1'))!;
    expect(doc.relationships).toEqual([]);
    expect(doc.pendingReferences).toEqual([]);
  });

  test('a late-arriving target resolves the objects waiting for it', () => {
    const { ws, a, index } = setup();
    planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1', managerId: 'E9' }), 'x', undefined);
    const e1 = projectedMeshId(A, 'h1');
    expect(ws.get(e1)!.pendingReferences).toHaveLength(1);
    planImport({ rules: a, now: NOW, ws }, 'h9', obj('h9', { employeeId: 'E9' }), 'x', undefined);
    const e9 = ws.get(projectedMeshId(A, 'h9'))!;
    const waiting = identityKeys(e9, index.attributes).flatMap(({ by, key }) => index.waiting(by, key));
    expect(waiting).toEqual([e1]);
    reresolve(ws, a, waiting, NOW);
    expect(ws.get(e1)!.relationships[0]).toMatchObject({ type: 'manager', targetId: e9.id, targetAnchor: 'E9' });
    expect(ws.get(e1)!.pendingReferences).toEqual([]);
  });

  test('a script that fails is a per-object error and the object is retried next time (no hash)', () => {
    const { ws } = setup();
    const rules = compileRuleSet(A, [
      r({ ruleType: 'ProjectionRule', sourceAttribute: 'id' }),
      r({ sourceAttribute: 'n', targetAttribute: 'n', confidence: 1, transformScript: 'source.toFixed(1)' }),
    ]);
    const plan = planImport({ rules, now: NOW, ws }, 'b3', obj('b3', { id: 'b3', n: 'abc' }), 'h', undefined);
    expect(plan.outcome).toBe('error');
    expect(plan.cs.hash).toBe('');
  });

  test('exported values that do not come back are flagged', () => {
    const { ws, a } = setup();
    const prev = { anchor: 'h1', objectType: 'User', attributes: {}, hash: '', rulesHash: '', meshId: null, exported: { mail: 'new@x' }, updatedOn: NOW };
    const plan = planImport({ rules: a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1', mail: 'old@x' }), 'h', prev);
    expect(plan.cs.unconfirmed).toEqual(['mail']);
  });

  test("a directory's DN values come back in its own spelling: confirmed when they name the same entries", () => {
    const { ws, a } = setup();
    const refs = (type: string): CsLookup => ({
      connectorId: A,
      policy: referencePolicy(A, type, {}, []),
      anchorOfDn: () => undefined,
      entry: () => undefined,
    });
    const written = 'uid=E1,ou=Sales\\, EMEA,ou=people,dc=example,dc=com';
    const shown = 'uid=E1,ou=Sales\\2C EMEA,ou=people,dc=example,dc=com';
    const prev = {
      anchor: 'h1',
      objectType: 'User',
      attributes: {},
      hash: '',
      rulesHash: '',
      meshId: null,
      exported: { manager: written, member: [written, 'cn=B,dc=x'], roleOccupant: written, seeAlsoText: written, mail: 'A@x' },
      updatedOn: NOW,
    };
    const object: ConnectorObject = {
      ...obj('h1', { employeeId: 'E1', manager: shown, member: ['CN=b, DC=x', shown], roleOccupant: shown, seeAlsoText: shown, mail: 'a@x' }),
      references: { manager: [shown], member: ['CN=b, DC=x', shown], roleOccupant: [shown] },
    };
    // A directory: manager and member (well-known), roleOccupant (marked a reference by the connector) are DNs;
    // another attribute is a string, and mail is not case-folded.
    expect(planImport({ rules: a, now: NOW, ws, refs: refs('ldap') }, 'h1', object, 'h', prev).cs.unconfirmed).toEqual(['seeAlsoText', 'mail']);
    // An SQL connector compares strings as strings.
    expect(planImport({ rules: a, now: NOW, ws, refs: refs('sql') }, 'h1', object, 'h', prev).cs.unconfirmed).toEqual([
      'manager',
      'member',
      'roleOccupant',
      'seeAlsoText',
      'mail',
    ]);
    // Another entry is another entry.
    const other = { ...object, attributes: { ...object.attributes, manager: 'uid=E2,ou=Sales\\2C EMEA,ou=people,dc=example,dc=com', mail: 'A@x' } };
    expect(planImport({ rules: a, now: NOW, ws, refs: refs('ldap') }, 'h1', other, 'h', prev).cs.unconfirmed).toEqual(['manager', 'seeAlsoText']);
  });
});

describe('precedence', () => {
  const c = (p: Partial<Contribution>): Contribution => ({ c: 'x', r: 'r', conf: 50, pri: 100, v: 'v', at: '2026-01-01T00:00:00.000Z', ...p });
  test('highest confidence, then lower priority, then the newer value', () => {
    expect(winner([c({ v: 'a', conf: 40 }), c({ v: 'b', conf: 60 })])!.v).toBe('b');
    expect(winner([c({ v: 'a', pri: 10 }), c({ v: 'b', pri: 20 })])!.v).toBe('a');
    expect(winner([c({ v: 'a', at: '2026-01-01T00:00:00.000Z' }), c({ v: 'b', at: '2026-01-02T00:00:00.000Z' })])!.v).toBe('b');
    expect(winner([])).toBeUndefined();
  });
});

describe('deletion threshold', () => {
  test('default 500 objects or 20 %, configurable', () => {
    const deletes = (n: number, base: number, deletionThreshold?: unknown) => exceeded(thresholdsOf({ deletionThreshold }), { deletes: n }, base);
    expect(deletes(2, 10)).toEqual([]);
    expect(deletes(3, 10)).toEqual([{ operation: 'deletes', count: 3, limit: 2 }]);
    expect(deletes(501, 100000)).toEqual([{ operation: 'deletes', count: 501, limit: 500 }]);
    expect(deletes(501, 100000, 1000)).toEqual([]);
    expect(deletes(3, 10, { percent: 50 })).toEqual([]);
    expect(deletes(0, 0)).toEqual([]);
  });
});

describe('MeshIndex', () => {
  test('keeps anchor, attribute, pending and incoming entries in step with object states', () => {
    const ix = new MeshIndex(new Set(['employeeId']));
    const doc: MeshObject = {
      id: 'a1',
      objectType: 'User',
      anchorValue: 'Ann',
      createdOn: NOW,
      updatedOn: NOW,
      attributes: { employeeId: { value: 'E1', sourceConnectorId: A, confidence: 1, updatedOn: NOW } },
      contributions: {},
      links: {},
      relationships: [{ type: 'manager', targetId: 'b1', targetAnchor: 'B', targetType: 'User' }],
      pendingReferences: [{ type: 'peer', value: 'X9' }],
    };
    ix.apply('a1', doc);
    expect(ix.find(undefined, 'ann')).toEqual(['a1']);
    expect(ix.find('employeeId', 'e1')).toEqual(['a1']);
    expect(ix.waiting(undefined, 'x9')).toEqual(['a1']);
    expect(ix.incoming('b1')).toEqual(['a1']);
    ix.apply('a1', { ...doc, anchorValue: 'Anne', relationships: [], pendingReferences: [] });
    expect(ix.find(undefined, 'ann')).toEqual([]);
    expect(ix.find(undefined, 'anne')).toEqual(['a1']);
    expect(ix.incoming('b1')).toEqual([]);
    ix.apply('a1', null);
    expect(ix.size).toBe(0);
    expect(ix.find('employeeId', 'e1')).toEqual([]);
  });
});

describe('planImport: a target object the export deprovisioned', () => {
  const prevOf = (deprovisioned: NonNullable<import('../../../lib/sync/model').CsObject['deprovisioned']>, meshId: string | null) => ({
    anchor: 'h9',
    objectType: 'User',
    attributes: { employeeId: 'E9' },
    hash: 'old',
    rulesHash: 'r',
    meshId,
    deprovisioned,
    updatedOn: NOW,
  });

  test('a disabled one is not projected again by its own connector (the leaver stays out of the mesh), and keeps its marker', () => {
    const { ws, a } = setup();
    const plan = planImport(
      { rules: a, now: NOW, ws },
      'h9',
      obj('h9', { employeeId: 'E9' }),
      'hash9',
      prevOf({ state: 'disabled', reason: 'gone', at: NOW, written: ['x'] }, null),
    );
    expect(plan.cs.meshId).toBeNull();
    expect(plan.cs.deprovisioned).toMatchObject({ state: 'disabled' });
    expect(ws.get(projectedMeshId(A, 'h9'))).toBeFalsy();
  });

  test('a pending one (its mesh object went away, grace running) keeps that mesh id, so that a return of the object finds it', () => {
    const { ws, a } = setup();
    const gone = '00000000-0000-4000-8000-0000000000ff';
    const plan = planImport(
      { rules: a, now: NOW, ws },
      'h9',
      obj('h9', { employeeId: 'E9' }),
      'hash9',
      prevOf({ state: 'pending', reason: 'gone', at: NOW, due: NOW }, gone),
    );
    expect(plan.cs).toMatchObject({ meshId: gone, deprovisioned: { state: 'pending' } });
  });

  test('joined again (a rehire), it keeps its marker for the export to enable it', () => {
    const { ws, b } = setup();
    const doc = planImport({ rules: setup().a, now: NOW, ws }, 'h1', obj('h1', { employeeId: 'E1' }), 'hash1', undefined);
    expect(doc.cs.meshId).toBeTruthy();
    const plan = planImport({ rules: b, now: NOW, ws }, 'b1', obj('b1', { emp: 'e1' }), 'hb', {
      ...prevOf({ state: 'disabled', reason: 'gone', at: NOW, written: ['accountDisabled'] }, null),
      anchor: 'b1',
      provisioned: true,
    });
    // It was added by the export (provisioned): that stays known for the export to make the new link a provisioned one.
    expect(plan.cs).toMatchObject({ meshId: doc.cs.meshId, provisioned: true, deprovisioned: { state: 'disabled' } });
  });
});
