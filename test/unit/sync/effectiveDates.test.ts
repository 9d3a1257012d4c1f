import type { ConnectorObject } from '../../../lib/connectors/sdk';
import { MeshIndex } from '../../../lib/mesh/joinIndex';
import { projectedMeshId } from '../../../lib/mesh/model';
import { effectiveAt } from '../../../lib/sync/effectiveDates';
import { planImport, WorkingSet } from '../../../lib/sync/planner';
import { compileRuleSet } from '../../../lib/sync/rules';
import { A, ruleBuilder } from './syncSupport';

/** Future-dated values in the pure import planning: kept out until their date, the previous value staying. */

const r = ruleBuilder();
const RULES = [
  r({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId', objectType: 'User' }),
  r({ sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 }),
  r({ sourceAttribute: 'title', targetAttribute: 'title', confidence: 50, direction: 'inbound', effectiveFromAttribute: 'titleFrom' }),
];
const obj = (attributes: ConnectorObject['attributes']): ConnectorObject => ({ anchor: 'h1', objectType: 'User', attributes });
const NOW = '2026-12-01T00:00:00.000Z';
const clock = Date.parse(NOW);

test('the date a value takes effect: ISO 8601 (UTC unless it names a zone), GeneralizedTime; nothing for a missing or unreadable one', () => {
  expect(effectiveAt('2026-12-07')).toBe(Date.parse('2026-12-07T00:00:00Z'));
  expect(effectiveAt('2026-12-07T00:00:00+01:00')).toBe(Date.parse('2026-12-06T23:00:00Z'));
  expect(effectiveAt(['20261207000000Z', '2030-01-01'])).toBe(Date.parse('2026-12-07T00:00:00Z'));
  for (const none of [undefined, null, '', 'soon', true]) expect(effectiveAt(none)).toBeUndefined();
});

test('a value dated ahead keeps the previous one and says when it takes effect; on its date it is applied', () => {
  const ws = new WorkingSet(new MeshIndex(new Set()));
  const rules = compileRuleSet(A, RULES);
  expect(rules.dated).toBe(true);
  const first = planImport({ rules, now: NOW, clock, ws }, 'h1', obj({ employeeId: 'E1', title: 'Engineer' }), 'x', undefined);
  expect(first.due).toBeUndefined();
  const id = projectedMeshId(A, 'h1');
  expect(ws.get(id)!.attributes.title?.value).toBe('Engineer');

  const ahead = planImport({ rules, now: NOW, clock, ws }, 'h1', obj({ employeeId: 'E1', title: 'Senior Engineer', titleFrom: '2026-12-07' }), 'y', first.cs);
  expect(ahead.outcome).toBe('updated');
  expect(ahead.due).toBe(Date.parse('2026-12-07T00:00:00Z'));
  expect(ws.get(id)!.attributes.title?.value).toBe('Engineer');

  const onTheDate = Date.parse('2026-12-07T00:00:00Z');
  const applied = planImport(
    { rules, now: NOW, clock: onTheDate, ws },
    'h1',
    obj({ employeeId: 'E1', title: 'Senior Engineer', titleFrom: '2026-12-07' }),
    'y',
    ahead.cs,
  );
  expect(applied.due).toBeUndefined();
  expect(ws.get(id)!.attributes.title?.value).toBe('Senior Engineer');
});

test('a new object with a value dated ahead gets no value until the date; a date already past is in effect', () => {
  const ws = new WorkingSet(new MeshIndex(new Set()));
  const rules = compileRuleSet(A, RULES);
  const plan = planImport({ rules, now: NOW, clock, ws }, 'h1', obj({ employeeId: 'E1', title: 'Engineer', titleFrom: '2027-01-01' }), 'x', undefined);
  expect(plan.due).toBe(Date.parse('2027-01-01T00:00:00Z'));
  expect(ws.get(projectedMeshId(A, 'h1'))!.attributes.title).toBeUndefined();
  const past = planImport({ rules, now: NOW, clock, ws }, 'h1', obj({ employeeId: 'E1', title: 'Engineer', titleFrom: '2026-01-01' }), 'y', plan.cs);
  expect(past.due).toBeUndefined();
  expect(ws.get(projectedMeshId(A, 'h1'))!.attributes.title?.value).toBe('Engineer');
});
