import { compileExpression } from '../../../../lib/expression/index';
import type { MeshObject } from '../../../../lib/mesh/model';
import { deprovisioningSettings } from '../../../../lib/sync/deprovisioning';
import { planExport, sameTargetValue, type ExportPlanInput } from '../../../../lib/sync/export/plan';
import { exportRelations } from '../../../../lib/sync/export/exportReferences';
import type { CsObject } from '../../../../lib/sync/model';
import { compileRuleSet } from '../../../../lib/sync/rules';
import { A, B, ruleBuilder } from '../syncSupport';

/** The export planner without I/O: mesh states and the target's rows in, changes out. */
const NOW = '2026-11-29T06:00:00.000Z';
const r = ruleBuilder();
const RULES = [
  r({ connectorId: B, direction: 'outbound', sourceAttribute: 'employeeId', targetAttribute: 'employee_id' }),
  r({ connectorId: B, direction: 'outbound', sourceAttribute: 'givenName', targetAttribute: 'given_name' }),
  r({ connectorId: B, direction: 'outbound', sourceAttribute: 'title', targetAttribute: 'title' }),
  r({ connectorId: B, direction: 'outbound', sourceAttribute: 'manager', targetAttribute: 'manager' }),
];

const attr = (value: string) => ({ value, sourceConnectorId: A, confidence: 80, updatedOn: NOW });
function doc(id: string, values: Record<string, string>, extra: Partial<MeshObject> = {}): MeshObject {
  return {
    id,
    objectType: 'User',
    anchorValue: values.employeeId ?? id,
    createdOn: NOW,
    updatedOn: NOW,
    attributes: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, attr(v)])),
    contributions: {},
    links: {},
    relationships: [],
    pendingReferences: [],
    ...extra,
  };
}
const row = (anchor: string, meshId: string, attributes: Record<string, string | null>, extra: Partial<CsObject> = {}): CsObject => ({
  anchor,
  objectType: 'User',
  attributes,
  hash: 'h',
  rulesHash: '',
  meshId,
  updatedOn: NOW,
  ...extra,
});

async function input(docs: MeshObject[], rows: CsObject[], extra: Partial<ExportPlanInput> = {}, related: MeshObject[] = []): Promise<ExportPlanInput> {
  const rules = compileRuleSet(B, RULES);
  const all = new Map([...docs, ...related].map((d) => [d.id, d]));
  const relations = await exportRelations(rules, docs, {
    connectorId: B,
    loadDocs: async (ids) => new Map(ids.filter((i) => all.has(i)).map((i) => [i, all.get(i)!])),
    dnOf: (anchor) => `uid=${anchor},ou=People,dc=x`,
    targetKind: 'dn',
    echoes: new Map([['manager', new Set([B])]]),
  });
  return {
    connectorId: B,
    at: new Date(NOW),
    objectType: 'User',
    passwordOnUpdate: false,
    condition: null,
    settings: deprovisioningSettings({}, 'ldap'),
    rules,
    docs,
    rows: new Map(rows.map((x) => [x.anchor, x])),
    waiting: new Map(),
    relations,
    dnAttributes: new Set(['manager']),
    ...extra,
  };
}

describe('planExport', () => {
  test('an object not in the target is an add carrying its whole state', async () => {
    const plan = planExport(await input([doc('m1', { employeeId: 'E1', givenName: 'Ann', title: 'Dev' })], []));
    expect(plan.changes).toHaveLength(1);
    const c = plan.changes[0].change;
    expect(c.kind).toBe('add');
    expect(c.attributes).toEqual({ employee_id: 'E1', given_name: 'Ann', title: 'Dev', manager: null });
    expect(c.state).toEqual(c.attributes);
  });

  test('an update sends what differs, with the whole state and what the target shows', async () => {
    const d = doc('m1', { employeeId: 'E1', givenName: 'Ann', title: 'Lead' }, { links: { [B]: 'E1' } });
    const prev = row('E1', 'm1', { employee_id: 'E1', given_name: 'Ann', title: 'Dev' }, { exported: { manager: null } });
    const [c] = planExport(await input([d], [prev])).changes;
    expect(c.change).toMatchObject({ kind: 'update', anchor: 'E1', attributes: { title: 'Lead' } });
    expect(c.change.state).toEqual({ employee_id: 'E1', given_name: 'Ann', title: 'Lead', manager: null });
    expect(c.change.previous).toEqual({ employee_id: 'E1', given_name: 'Ann', title: 'Dev', manager: null });
  });

  test('nothing differs: no change', async () => {
    const d = doc('m1', { employeeId: 'E1', givenName: 'Ann', title: 'Dev' }, { links: { [B]: 'E1' } });
    const prev = row('E1', 'm1', { employee_id: 'E1', given_name: 'Ann', title: 'Dev', manager: null });
    expect(planExport(await input([d], [prev])).changes).toEqual([]);
  });

  test('a reference the target read back is not merged into the one the engine writes (no second manager)', async () => {
    const boss = doc('m2', { employeeId: 'E2' }, { links: { [B]: 'E2' } });
    const old = doc('m3', { employeeId: 'E3' }, { links: { [B]: 'E3' } });
    const d = doc(
      'm1',
      { employeeId: 'E1', givenName: 'Ann', title: 'Dev' },
      {
        links: { [B]: 'E1' },
        relationships: [
          { type: 'manager', targetId: 'm2', targetAnchor: 'E2', targetType: 'User', c: A },
          // What the target's confirming import read back: the manager before the change.
          { type: 'manager', targetId: 'm3', targetAnchor: 'E3', targetType: 'User', c: B },
        ],
      },
    );
    const prev = row('E1', 'm1', { employee_id: 'E1', given_name: 'Ann', title: 'Dev', manager: 'uid=E3,ou=People,dc=x' });
    const [c] = planExport(await input([d], [prev], {}, [boss, old])).changes;
    expect(c.change.attributes).toEqual({ manager: 'uid=E2,ou=People,dc=x' });
  });

  test('a reference to an object not in the target is left out and reported missing', async () => {
    const boss = doc('m2', { employeeId: 'E2' });
    const d = doc('m1', { employeeId: 'E1' }, { relationships: [{ type: 'manager', targetId: 'm2', targetAnchor: 'E2', targetType: 'User', c: A }] });
    const i = await input([d], [], {}, [boss]);
    const [c] = planExport(i).changes;
    expect(c.change.attributes.manager).toBeNull();
    expect([...i.relations.missingIn]).toEqual(['m1']);
  });

  test('DN-valued attributes compare as DNs: escapes, case and spaces', () => {
    const dn = new Set(['manager']);
    expect(sameTargetValue(dn, 'manager', 'uid=E1,ou=Sales\\, EMEA,dc=x', 'UID=E1, OU=Sales\\2C EMEA,DC=x')).toBe(true);
    expect(sameTargetValue(dn, 'manager', 'uid=E1,ou=Sales,dc=x', 'uid=E2,ou=Sales,dc=x')).toBe(false);
    expect(sameTargetValue(new Set(), 'title', 'A=b', 'a=B')).toBe(false);
  });

  test('out of the provisioning condition: no add; a rule that fails: an error, nothing sent', async () => {
    const condition = compileExpression("object.title == 'Dev'");
    const plan = planExport(await input([doc('m1', { employeeId: 'E1', title: 'Ops' })], [], { condition }));
    expect(plan.changes).toEqual([]);
    const failing = compileRuleSet(B, [
      r({ connectorId: B, direction: 'outbound', sourceAttribute: 'title', targetAttribute: 'title', transformScript: 'source.toFixed(1)' }),
    ]);
    const i = await input([doc('m1', { employeeId: 'E1', title: 'x' })], []);
    const p2 = planExport({ ...i, rules: failing });
    expect(p2.changes).toEqual([]);
    expect(p2.errors).toHaveLength(1);
  });

  test('onConditionFalse with a grace: the first look marks the row pending with its due date, nothing sent', async () => {
    const condition = compileExpression("object.title == 'Dev'");
    const settings = deprovisioningSettings({ deprovisioning: { action: 'delete', graceDays: 2, onConditionFalse: true } }, 'ldap');
    const d = doc('m1', { employeeId: 'E1', title: 'Ops' }, { links: { [B]: 'E1' } });
    const plan = planExport(await input([d], [row('E1', 'm1', { title: 'Dev' })], { condition, settings }));
    expect(plan.changes).toEqual([]);
    expect(plan.quietRows[0].deprovisioned).toMatchObject({ state: 'pending', reason: 'condition', due: '2026-12-01T06:00:00.000Z' });
  });
});
