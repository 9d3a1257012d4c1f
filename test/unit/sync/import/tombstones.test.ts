import type { ConnectorObject } from '../../../../lib/connectors/sdk';
import { MeshIndex } from '../../../../lib/mesh/joinIndex';
import { projectedMeshId, type MeshObject } from '../../../../lib/mesh/model';
import { TombstoneIndex } from '../../../../lib/mesh/tombstoneIndex';
import type { CsObject } from '../../../../lib/sync/model';
import { planImport, tombstonesToLoad, WorkingSet } from '../../../../lib/sync/planner';
import { compileRuleSet } from '../../../../lib/sync/rules';
import type { Rule } from '../../../../lib/storage/rules';
import { ruleBuilder } from '../syncSupport';

/**
 * The planner and tombstones: a removed object leaves its last state (for its tombstone), and an object that
 * would be projected comes back to its tombstone instead (same anchor, or a join rule's match), with the
 * tombstone's id, creation and values of the connectors still linked.
 */
const H = '00000000-0000-4000-8000-0000000000a1';
const T = '00000000-0000-4000-8000-0000000000a2';
const r = ruleBuilder(H);
const RULES: Rule[] = [
  r({ ruleType: 'JoinRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId' }),
  r({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId', objectType: 'User' }),
  r({ sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 }),
  r({ sourceAttribute: 'givenName', targetAttribute: 'givenName', confidence: 50 }),
  r({ connectorId: T, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 80 }),
];
const obj = (anchor: string, attributes: ConnectorObject['attributes']): ConnectorObject => ({ anchor, objectType: 'User', attributes });
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-02-01T00:00:00.000Z';
const T2 = '2026-02-02T00:00:00.000Z';
const rules = compileRuleSet(H, RULES);
const row = (anchor: string, meshId: string | null): CsObject => ({
  anchor,
  objectType: 'User',
  attributes: {},
  hash: 'h',
  rulesHash: rules.hash,
  meshId,
  updatedOn: T0,
});

/** A person imported from HR (anchor `h1`), then linked to a target T (which contributed `mail`). */
function imported(): { ws: WorkingSet; index: MeshIndex; doc: MeshObject } {
  const index = new MeshIndex(new Set(['employeeId']));
  const ws = new WorkingSet(index);
  planImport({ rules, now: T0, ws, runId: 'run0' }, 'h1', obj('h1', { employeeId: 'E1', givenName: 'Ann' }), 'x', undefined);
  const doc = structuredClone(ws.get(projectedMeshId(H, 'h1'))!);
  doc.links[T] = 'uid=E1';
  doc.provisioned = [T];
  doc.contributions.mail = [{ c: T, r: RULES[4].ruleId, conf: 80, pri: 100, v: 'ann@x', at: T0 }];
  doc.attributes.mail = { value: 'ann@x', sourceConnectorId: T, confidence: 80, updatedOn: T0 };
  return { ws, index, doc };
}

/** A fresh page that has the tombstone `state` (its links as reconciled) to look at. */
function pageWith(state: MeshObject): { ws: WorkingSet; tombs: TombstoneIndex } {
  const tombs = new TombstoneIndex();
  tombs.add(state);
  const ws = new WorkingSet(new MeshIndex(new Set(['employeeId'])));
  ws.tombstones = tombs;
  return { ws, tombs };
}

describe('planner and tombstones', () => {
  test('a delete that removes the last contributor keeps the last state (with its values) for the tombstone', () => {
    const { ws, doc } = imported();
    const page = new WorkingSet(ws.index);
    page.load(new Map([[doc.id, doc]]), [doc.id]);
    const plan = planImport({ rules, now: T1, ws: page }, 'h1', null, '', row('h1', doc.id));
    expect(plan.outcome).toBe('deleted');
    expect(page.get(doc.id)).toBeNull();
    // Provisioned into T only: that link does not keep it alive; its last state still has every value.
    expect(page.removedStates.get(doc.id)).toMatchObject({
      id: doc.id,
      attributes: { employeeId: { value: 'E1' }, givenName: { value: 'Ann' }, mail: { value: 'ann@x' } },
      links: { [H]: 'h1', [T]: 'uid=E1' },
    });
  });

  test('nothing to read without tombstones, or for an object already linked', () => {
    const empty = new TombstoneIndex();
    expect(tombstonesToLoad(rules, empty, obj('h1', { employeeId: 'E1' }), undefined)).toEqual([]);
    expect(tombstonesToLoad(rules, undefined, obj('h1', { employeeId: 'E1' }), undefined)).toEqual([]);
    const { doc } = imported();
    const { tombs } = pageWith(doc);
    expect(tombstonesToLoad(rules, tombs, obj('h1', { employeeId: 'E1' }), row('h1', doc.id))).toEqual([]);
    expect(tombstonesToLoad(rules, tombs, null, undefined)).toEqual([]);
  });

  test('the same anchor comes back: the same id, its creation kept, Restored in the page (revived)', () => {
    const { doc } = imported();
    const { ws, tombs } = pageWith(doc);
    const ids = tombstonesToLoad(rules, tombs, obj('h1', { employeeId: 'E1', givenName: 'Ann' }), row('h1', null));
    expect(ids).toContain(doc.id);
    // The engine reads the tombstone and reconciles its links: T's object was deleted, so no link to T.
    const reconciled = structuredClone(doc);
    delete reconciled.links[T];
    delete reconciled.provisioned;
    ws.loadTombstones([reconciled]);
    const plan = planImport({ rules, now: T2, ws, runId: 'run2' }, 'h1', obj('h1', { employeeId: 'E1', givenName: 'Annie' }), 'y', row('h1', null));
    expect(plan.cs.meshId).toBe(doc.id);
    expect(plan.join).toMatchObject({ outcome: 'joined', candidates: [doc.id] });
    const back = ws.get(doc.id)!;
    expect(back).toMatchObject({ createdOn: T0, createdRun: 'run0', links: { [H]: 'h1' }, attributes: { givenName: { value: 'Annie' } } });
    // T's value went with its link (it gives its own again when it is linked again).
    expect(back.attributes.mail).toBeUndefined();
    expect(back.links[T]).toBeUndefined();
    expect(ws.revived.has(doc.id)).toBe(true);
    expect(ws.tombs.has(doc.id)).toBe(false);
  });

  test('a rehire with a new anchor is matched by the join rule and gets the same id', () => {
    const { doc } = imported();
    const { ws, tombs } = pageWith(doc);
    const rehire = obj('h99', { employeeId: 'e1', givenName: 'Ann' });
    const ids = tombstonesToLoad(rules, tombs, rehire, undefined);
    expect(ids).toEqual([doc.id]);
    ws.loadTombstones([doc]);
    const plan = planImport({ rules, now: T2, ws }, 'h99', rehire, 'y', undefined);
    expect(plan.cs.meshId).toBe(doc.id);
    expect(plan.join).toMatchObject({ outcome: 'joined', ruleId: RULES[0].ruleId });
    expect(ws.get(doc.id)!.links[H]).toBe('h99');
  });

  test('a tombstone not read (purged meanwhile) never matches: a new object is projected', () => {
    const { doc } = imported();
    const { ws } = pageWith(doc);
    const plan = planImport({ rules, now: T2, ws }, 'h99', obj('h99', { employeeId: 'E1' }), 'y', undefined);
    expect(plan.cs.meshId).toBe(projectedMeshId(H, 'h99'));
    expect(plan.join?.outcome).toBe('projected');
    expect(ws.revived.size).toBe(0);
  });

  test('two tombstones matched by one join rule: an error naming both, nothing brought back', () => {
    const { doc } = imported();
    const other = { ...structuredClone(doc), id: projectedMeshId(H, 'h2'), anchorValue: 'E1', links: { [H]: 'h2' } };
    const { ws, tombs } = pageWith(doc);
    tombs.add(other);
    ws.loadTombstones([doc, other]);
    const plan = planImport({ rules, now: T2, ws }, 'h99', obj('h99', { employeeId: 'E1' }), 'y', undefined);
    expect(plan.outcome).toBe('error');
    expect(plan.error).toMatch(/matched 2 deleted mesh objects/);
    expect(ws.revived.size).toBe(0);
  });

  test('a live object found by the join rule wins over a tombstone', () => {
    const { doc, index } = imported();
    const live = { ...structuredClone(doc), id: projectedMeshId(H, 'h5'), links: {} };
    index.apply(live.id, live);
    const ws = new WorkingSet(index);
    const tombs = new TombstoneIndex();
    tombs.add(doc);
    ws.tombstones = tombs;
    ws.load(new Map([[live.id, live]]), [live.id]);
    ws.loadTombstones([doc]);
    const plan = planImport({ rules, now: T2, ws }, 'h99', obj('h99', { employeeId: 'E1' }), 'y', undefined);
    expect(plan.cs.meshId).toBe(live.id);
    expect(ws.revived.size).toBe(0);
  });
});

describe('TombstoneIndex', () => {
  test('finds by link, anchor and attribute values (case-folded); remove forgets every key', () => {
    const { doc } = imported();
    const ix = new TombstoneIndex();
    ix.add(doc);
    expect(ix.size).toBe(1);
    expect(ix.byLink(H, 'H1')).toEqual([doc.id]);
    expect(ix.byLink(T, 'UID=e1')).toEqual([doc.id]);
    expect(ix.find(undefined, 'e1')).toEqual([doc.id]);
    expect(ix.find('givenName', 'ann')).toEqual([doc.id]);
    expect(ix.find('givenName', 'bob')).toEqual([]);
    ix.remove(doc.id);
    expect(ix.size).toBe(0);
    expect(ix.find('employeeId', 'e1')).toEqual([]);
    expect(ix.byLink(H, 'h1')).toEqual([]);
  });
});
