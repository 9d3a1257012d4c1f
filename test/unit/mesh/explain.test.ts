import { classifyContributions, scriptInputs } from '../../../lib/mesh/explain';
import { attributeChanges, historyItems, historyRows, shownValue } from '../../../lib/mesh/history';
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
    expect(outcomes([c('hr', 80, 1, '2026-01-01'), c('ldap', 50, 1, '2026-02-01')])).toEqual({
      winner: 'hr',
      outcomes: { hr: 'won', ldap: 'lowerConfidence' },
    });
  });
  it('equal confidence: the lower priority number wins; the other has lowerPriority', () => {
    expect(outcomes([c('a', 50, 5, '2026-03-01'), c('b', 50, 1, '2026-01-01')])).toEqual({ winner: 'b', outcomes: { a: 'lowerPriority', b: 'won' } });
  });
  it('equal confidence and priority: the newer wins; the other is older', () => {
    expect(outcomes([c('a', 50, 1, '2026-01-01T00:00:00Z'), c('b', 50, 1, '2026-01-02T00:00:00Z')])).toEqual({
      winner: 'b',
      outcomes: { a: 'older', b: 'won' },
    });
  });
  it('a disabled rule takes no part: the next contribution wins, and it says ruleDisabled', () => {
    expect(outcomes([c('hr', 80, 1, '2026-01-01'), c('ldap', 50, 1, '2026-02-01')], (r) => r !== 'rule-hr')).toEqual({
      winner: 'ldap',
      outcomes: { hr: 'ruleDisabled', ldap: 'won' },
    });
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
  ({
    id: 'abc',
    attributes: Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, { value: v, sourceConnectorId: null, confidence: 0, updatedOn: '' }])),
  }) as unknown as MeshObject;

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
  it('rows: none for a created object, Updated only when values changed, Deleted (with its creation); newest sorts first', () => {
    const rows = historyRows('run1', 'conn', '2026-01-01T00:00:00.000Z', [
      { id: 'a1', before: null, after: obj({ x: 1 }) },
      { id: 'a2', before: obj({ x: 1 }), after: obj({ x: 1 }) },
      { id: 'a3', before: { ...obj({ x: 1 }), createdOn: '2025-12-01T00:00:00.000Z', createdRun: 'run0', createdBy: 'conn0' }, after: null },
    ]);
    expect(rows.map((r) => [r.o, r.co, r.cr, r.cc])).toEqual([['D', '2025-12-01T00:00:00.000Z', 'run0', 'conn0']]);
    const earlier = historyRows('run0', 'conn', '2025-12-31T00:00:00.000Z', [{ id: 'a3', before: obj({ x: 0 }), after: obj({ x: 1 }) }]);
    expect(rows[0].rowKey < earlier[0].rowKey).toBe(true);
  });
  it('masks secret attributes', () => {
    expect(shownValue('userPassword', 'hunter2')).toBe('********');
    expect(shownValue('title', 'Boss')).toBe('Boss');
  });
});

/** An object as the engine stores it: created by run `r0` of connector `hr` at T0. */
const T = (day: number) => `2026-01-0${day}T00:00:00.000Z`;
const current = (attrs: Record<string, unknown>): MeshObject => ({ ...obj(attrs), createdOn: T(1), createdRun: 'r0', createdBy: 'hr' });
/** The stored rows of a sequence of commits of object `abc`, as readHistory lists them (RowKey order). */
const stored = (...commits: [string, string, MeshObject | null, MeshObject | null][]) =>
  commits.flatMap(([run, at, before, after]) => historyRows(run, 'ldap', at, [{ id: 'abc', before, after }])).sort((a, b) => (a.rowKey < b.rowKey ? -1 : 1));

describe('derived Created entry', () => {
  it('reconstructs the values at creation through several updates, incl. attributes added and removed later', () => {
    const v0 = { mail: 'a@x', title: 'Dev', phone: '1' };
    const v1 = { mail: 'b@x', title: 'Dev', phone: '1', dept: 'R&D' }; // mail changed, dept added
    const v2 = { mail: 'b@x', title: 'Lead', dept: 'R&D', userPassword: 's3' }; // title changed, phone removed, a secret added
    const v3 = { mail: 'c@x', title: 'Lead', userPassword: 's4' }; // mail changed, dept removed, secret changed
    const rows = stored(['r1', T(2), obj(v0), obj(v1)], ['r2', T(3), obj(v1), obj(v2)], ['r3', T(4), obj(v2), obj(v3)]);
    const items = historyItems('ABC', rows, current(v3));
    expect(items.map((i) => [i.operation, i.runId, i.timestamp])).toEqual([
      ['Updated', 'r3', T(4)],
      ['Updated', 'r2', T(3)],
      ['Updated', 'r1', T(2)],
      ['Created', 'r0', T(1)],
    ]);
    expect(items[3]).toEqual({
      timestamp: T(1),
      runId: 'r0',
      connectorId: 'hr',
      operation: 'Created',
      changes: [
        { attribute: 'mail', old: null, new: 'a@x' },
        { attribute: 'phone', old: null, new: '1' },
        { attribute: 'title', old: null, new: 'Dev' },
      ],
    });
    expect(items[0].changes.find((c) => c.attribute === 'userPassword')).toEqual({ attribute: 'userPassword', old: '********', new: '********' });
  });
  it('as a stored Created row was: the oldest item, counted, sorted among rows by its time', () => {
    const legacy = historyRows('r0', 'hr', T(1), []).length; // no row for a creation
    expect(legacy).toBe(0);
    const rows = stored(['r1', T(2), obj({ x: 1 }), obj({ x: 2 })], ['old', '2025-06-01T00:00:00.000Z', obj({}), obj({ x: 1 })]);
    expect(historyItems('abc', rows, current({ x: 2 })).map((i) => [i.operation, i.runId])).toEqual([
      ['Updated', 'r1'],
      ['Created', 'r0'],
      ['Updated', 'old'],
    ]);
    expect(historyItems('abc', [], current({ x: 2 }))).toEqual([
      { timestamp: T(1), runId: 'r0', connectorId: 'hr', operation: 'Created', changes: [{ attribute: 'x', old: null, new: 2 }] },
    ]);
  });
  it('a deleted object: its creation comes from its Deleted row, its values from the values the deletion removed', () => {
    const created = current({ x: 1, y: 'a' });
    const rows = stored(['r1', T(2), created, { ...created, ...obj({ x: 2, y: 'a' }) }], ['r2', T(3), { ...created, ...obj({ x: 2, y: 'a' }) }, null]);
    expect(historyItems('abc', rows, null).map((i) => [i.operation, i.runId, i.changes])).toEqual([
      [
        'Deleted',
        'r2',
        [
          { attribute: 'x', old: 2, new: null },
          { attribute: 'y', old: 'a', new: null },
        ],
      ],
      ['Updated', 'r1', [{ attribute: 'x', old: 1, new: 2 }]],
      [
        'Created',
        'r0',
        [
          { attribute: 'x', old: null, new: 1 },
          { attribute: 'y', old: null, new: 'a' },
        ],
      ],
    ]);
  });
  it('an object without a recorded creation (created before) has none derived; a stored C row stays', () => {
    const legacyRow = { partitionKey: 'ha', rowKey: 'abc_9999_r0', t: T(1), r: 'r0', c: 'hr', o: 'C', d: JSON.stringify([['x', null, 1]]) };
    expect(historyItems('abc', [legacyRow], { ...obj({ x: 1 }), createdOn: T(1) }).map((i) => i.operation)).toEqual(['Created']);
  });
  it('retention: a derived Created entry older than the purge has gone is dropped', () => {
    expect(historyItems('abc', [], current({ x: 1 }), T(2))).toEqual([]);
    expect(historyItems('abc', [], current({ x: 1 }), T(1))).toHaveLength(1);
  });
});
