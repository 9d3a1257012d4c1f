import { loosenedGuardRails, requiresSecondPerson } from '../../../lib/plans/guardRails';

/** Which configuration changes loosen a connector's guard rails (pure). */
describe('loosenedGuardRails', () => {
  const loosen = (before: Record<string, unknown> | null, after: Record<string, unknown>, global = true) => loosenedGuardRails(before, after, global);

  it('a larger or removed limit loosens; a smaller one does not', () => {
    expect(loosen({}, { thresholds: { deletes: { count: 5000, percent: 20 } } })).toEqual([{ setting: 'thresholds.deletes.count', before: 500, after: 5000 }]);
    expect(loosen({}, { thresholds: { deletes: {} } })).toEqual([
      { setting: 'thresholds.deletes.count', before: 500, after: null },
      { setting: 'thresholds.deletes.percent', before: 20, after: null },
    ]);
    expect(loosen({}, { thresholds: { deletes: { count: 100, percent: 10 } } })).toEqual([]);
    expect(loosen({ thresholds: { updates: { count: 5 } } }, { thresholds: { updates: { count: 1000 } } })).toEqual([
      { setting: 'thresholds.updates.count', before: 5, after: 1000 },
    ]);
    expect(loosen({ thresholds: { updates: { count: 5 } } }, {})).toEqual([{ setting: 'thresholds.updates.count', before: 5, after: null }]);
    // A new limit where there was none tightens.
    expect(loosen({}, { thresholds: { blanks: { count: 0 } } })).toEqual([]);
  });

  it('compares the limit at every connector-space size: dropping the percent loosens small spaces', () => {
    expect(loosen({}, { thresholds: { deletes: { count: 10 } } })).toEqual([{ setting: 'thresholds.deletes.percent', before: 20, after: null }]);
    expect(loosen({}, { thresholds: { deletes: { count: 10, percent: 20 } } })).toEqual([]);
    // The older deletionThreshold is read as thresholds.deletes.
    expect(loosen({ deletionThreshold: 50 }, { deletionThreshold: 40 })).toEqual([]);
    expect(loosen({ deletionThreshold: 50 }, { deletionThreshold: { objects: 500, percent: 50 } }).map((r) => r.setting)).toEqual([
      'thresholds.deletes.count',
      'thresholds.deletes.percent',
    ]);
  });

  it('a shorter grace, a harsher action and four-eyes off loosen', () => {
    expect(loosen({ deprovisioning: { graceDays: 10 } }, { deprovisioning: { graceDays: 1 } })).toEqual([
      { setting: 'deprovisioning.graceDays', before: 10, after: 1 },
    ]);
    expect(loosen({ deprovisioning: { graceDays: 1 } }, { deprovisioning: { graceDays: 10 } })).toEqual([]);
    expect(loosen({ deprovisioning: { action: 'disable' } }, { deprovisioning: { action: 'delete' } })).toEqual([
      { setting: 'deprovisioning.action', before: 'disable', after: 'delete' },
    ]);
    expect(loosen({ deprovisioning: { action: 'none' } }, {})).toEqual([{ setting: 'deprovisioning.action', before: 'none', after: 'delete' }]);
    expect(loosen({}, { deprovisioning: { action: 'none' } })).toEqual([]);
    // An orphan sweep that deletes instead of disabling is harsher (absent is disable).
    expect(loosen({}, { deprovisioning: { orphanAction: 'delete' } })).toEqual([
      { setting: 'deprovisioning.orphanAction', before: 'disable', after: 'delete' },
    ]);
    expect(loosen({ deprovisioning: { orphanAction: 'delete' } }, { deprovisioning: { orphanAction: 'disable' } })).toEqual([]);
    expect(loosen({}, { approvals: { requireSecondPerson: false } })).toEqual([{ setting: 'approvals.requireSecondPerson', before: true, after: false }]);
    // Globally off: turning a connector's own rule off changes nothing.
    expect(loosen({}, { approvals: { requireSecondPerson: false } }, false)).toEqual([]);
  });

  it("a connector's own four-eyes setting overrides the global one", () => {
    expect(requiresSecondPerson({}, true)).toBe(true);
    expect(requiresSecondPerson({ approvals: { requireSecondPerson: true } }, false)).toBe(true);
    expect(requiresSecondPerson({ approvals: { requireSecondPerson: false } }, true)).toBe(false);
  });
});
