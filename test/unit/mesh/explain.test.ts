import { classifyContributions, scriptInputs } from '../../../lib/mesh/explain';
import { attributeChanges, historyRows, shownValue } from '../../../lib/mesh/history';
import type { Contribution, MeshObject } from '../../../lib/mesh/model';

/** Explain's outcome classification and history's attribute-level changes (pure). */
const c = (id: string, conf: number, pri: number, at: string, v = id): Contribution => ({ c: id, r: 'rule-' + id, conf, pri, v, at });
const enabled = () => true;
const outcomes = (list: Contribution[], isEnabled: (r: string) => boolean = enabled) => {
  const { winner, candidates } = classifyContributions(list, isEnabled);
  return { winner: winner?.contribution.c ?? null, outcomes: Object.fromEntries(candidates.map((x) => [x.contribution.c, x.outcome])) };
};

describe('explain outcomes', () => {
  it('higher confidence wins; the other has lowerConfidence', () => {
    expect(outcomes([c('hr', 80, 1, '2026-01-01'), c('ldap', 50, 1, '2026-02-01')])).toEqual({ winner: 'hr', outcomes: { hr: 'won', ldap: 'lowerConfidence' } });
  });
  it('equal confidence: the lower priority number wins; the other has lowerPriority', () => {
    expect(outcomes([c('a', 50, 5, '2026-03-01'), c('b', 50, 1, '2026-01-01')])).toEqual({ winner: 'b', outcomes: { a: 'lowerPriority', b: 'won' } });
  });
  it('equal confidence and priority: the newer wins; the other is older', () => {
    expect(outcomes([c('a', 50, 1, '2026-01-01T00:00:00Z'), c('b', 50, 1, '2026-01-02T00:00:00Z')])).toEqual({ winner: 'b', outcomes: { a: 'older', b: 'won' } });
  });
  it('a disabled rule takes no part: the next contribution wins, and it says ruleDisabled', () => {
    expect(outcomes([c('hr', 80, 1, '2026-01-01'), c('ldap', 50, 1, '2026-02-01')], (r) => r !== 'rule-hr')).toEqual({ winner: 'ldap', outcomes: { hr: 'ruleDisabled', ldap: 'won' } });
  });
  it('every rule disabled: no winner', () => {
    expect(outcomes([c('hr', 80, 1, '2026-01-01')], () => false)).toEqual({ winner: null, outcomes: { hr: 'ruleDisabled' } });
  });
  it('lists the winner first', () => {
    const { candidates } = classifyContributions([c('a', 10, 1, 'x'), c('b', 20, 1, 'x'), c('d', 90, 1, 'x')], enabled);
    expect(candidates.map((x) => x.contribution.c)).toEqual(['d', 'b', 'a']);
  });
  it('reads the inputs of a composer script', () => {
    expect(scriptInputs("source.givenName + ' ' + object['sn'] + source.givenName")).toEqual(['givenName', 'sn']);
    expect(scriptInputs(null)).toEqual([]);
  });
});

const obj = (attrs: Record<string, unknown>): MeshObject =>
  ({ id: 'abc', attributes: Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, { value: v, sourceConnectorId: null, confidence: 0, updatedOn: '' }])) }) as unknown as MeshObject;

describe('history changes', () => {
  it('lists changed attributes with old and new, sorted', () => {
    expect(attributeChanges(obj({ title: 'A', mail: 'm' }), obj({ title: 'B', mail: 'm', dept: 'X' }))).toEqual([
      { attribute: 'dept', old: null, new: 'X' },
      { attribute: 'title', old: 'A', new: 'B' },
    ]);
  });
  it('multi-valued attributes compare as sets', () => {
    expect(attributeChanges(obj({ m: ['a', 'b'] }), obj({ m: ['b', 'a'] }))).toEqual([]);
  });
  it('rows: Created, Updated only when values changed, Deleted; newest sorts first', () => {
    const rows = historyRows('run1', 'conn', '2026-01-01T00:00:00.000Z', [
      { id: 'a1', before: null, after: obj({ x: 1 }) },
      { id: 'a2', before: obj({ x: 1 }), after: obj({ x: 1 }) },
      { id: 'a3', before: obj({ x: 1 }), after: null },
    ]);
    expect(rows.map((r) => r.o)).toEqual(['C', 'D']);
    const later = historyRows('run2', 'conn', '2026-01-02T00:00:00.000Z', [{ id: 'a1', before: obj({ x: 1 }), after: obj({ x: 2 }) }]);
    expect(later[0].rowKey < rows[0].rowKey).toBe(true);
  });
  it('masks secret attributes', () => {
    expect(shownValue('userPassword', 'hunter2')).toBe('********');
    expect(shownValue('title', 'Boss')).toBe('Boss');
  });
});
