import type { ConnectorObject } from '../../../lib/connectors/sdk';
import { MeshIndex } from '../../../lib/mesh/joinIndex';
import { projectedMeshId } from '../../../lib/mesh/model';
import { planImport, WorkingSet } from '../../../lib/sync/planner';
import { compileRuleSet } from '../../../lib/sync/rules';
import { A, ruleBuilder } from './syncSupport';

/** Inbound flows and computed attributes that read now(): evaluated with the engine's clock, their next instant in the plan. */

const r = ruleBuilder();
const BASE = [
  r({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId', objectType: 'User' }),
  r({ sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 }),
  r({ sourceAttribute: 'hireDate', targetAttribute: 'hireDate', confidence: 50 }),
];
const STATUS = r({
  ruleType: 'MeshComposerRule',
  connectorId: null,
  targetAttribute: 'status',
  transformScript: 'now() >= date(object.hireDate) ? "active" : "prehire"',
});
const STARTED = r({ sourceAttribute: 'hireDate', targetAttribute: 'started', confidence: 50, transformScript: 'now() >= date(source)' });
const obj = (attributes: ConnectorObject['attributes']): ConnectorObject => ({ anchor: 'h1', objectType: 'User', attributes });
const NOW = '2026-12-01T00:00:00.000Z';
const HIRE = Date.parse('2026-12-04T00:00:00Z');

test('a rule set whose computed attribute or inbound flow reads now() records instants; one without does not', () => {
  expect(compileRuleSet(A, BASE).dated).toBe(false);
  expect(compileRuleSet(A, [...BASE, STATUS]).dated).toBe(true);
  expect(compileRuleSet(A, [...BASE, STARTED]).dated).toBe(true);
});

test('a computed attribute reading now() is computed with the engine clock and says when it changes next', () => {
  const ws = new WorkingSet(new MeshIndex(new Set()));
  const rules = compileRuleSet(A, [...BASE, STATUS]);
  const id = projectedMeshId(A, 'h1');
  const before = planImport({ rules, now: NOW, clock: Date.parse(NOW), ws }, 'h1', obj({ employeeId: 'E1', hireDate: '2026-12-04' }), 'x', undefined);
  expect(before.due).toBe(HIRE);
  expect(ws.get(id)!.attributes.status?.value).toBe('prehire');
  const on = planImport({ rules, now: NOW, clock: HIRE, ws }, 'h1', obj({ employeeId: 'E1', hireDate: '2026-12-04' }), 'x', before.cs);
  expect(on.due).toBeUndefined();
  expect(ws.get(id)!.attributes.status?.value).toBe('active');
});

test('an inbound flow reading now() gives its value by the engine clock and its next instant, the earliest of all', () => {
  const ws = new WorkingSet(new MeshIndex(new Set()));
  const late = r({ sourceAttribute: 'endDate', targetAttribute: 'ended', confidence: 50, transformScript: 'now() > endOfDay(date(source))' });
  const rules = compileRuleSet(A, [...BASE, STARTED, late]);
  const plan = planImport(
    { rules, now: NOW, clock: Date.parse(NOW), ws },
    'h1',
    obj({ employeeId: 'E1', hireDate: '2026-12-04', endDate: '2026-12-31' }),
    'x',
    undefined,
  );
  expect(plan.due).toBe(HIRE);
  expect(ws.get(projectedMeshId(A, 'h1'))!.attributes.started?.value).toBe(false);
});
