import { DEFAULT_THRESHOLDS, exceeded, guardsMoreThanDeletes, limitOf, reasonsText, thresholdsOf } from '../../../lib/plans/thresholds';

describe('thresholds of a connector', () => {
  test('default: deletes above 500 or 20 %', () => {
    expect(thresholdsOf({})).toEqual({ deletes: { count: 500, percent: 20 } });
    expect(DEFAULT_THRESHOLDS).toEqual({ deletes: { count: 500, percent: 20 } });
  });

  test('thresholds replace the defaults key by key; deletes: {} sets no limit', () => {
    expect(thresholdsOf({ thresholds: { updates: { percent: 10 } } })).toEqual({ deletes: { count: 500, percent: 20 }, updates: { percent: 10 } });
    const none = thresholdsOf({ thresholds: { deletes: {} } });
    expect(limitOf(none.deletes, 1000)).toBeNull();
  });

  test('deletionThreshold is read as thresholds.deletes (a count, or { objects, percent })', () => {
    expect(thresholdsOf({ deletionThreshold: 10 }).deletes).toEqual({ count: 10, percent: 20 });
    expect(thresholdsOf({ deletionThreshold: { objects: 10, percent: 100 } }).deletes).toEqual({ count: 10, percent: 100 });
    expect(thresholdsOf({ deletionThreshold: { percent: 5 } }).deletes).toEqual({ count: 500, percent: 5 });
    // thresholds.deletes wins over the older setting
    expect(thresholdsOf({ deletionThreshold: 10, thresholds: { deletes: { count: 3 } } }).deletes).toEqual({ count: 3 });
  });

  test('the limit is the smaller of count and percent of the base; no percent limit on an empty space', () => {
    expect(limitOf({ count: 500, percent: 20 }, 100)).toBe(20);
    expect(limitOf({ count: 5, percent: 20 }, 100)).toBe(5);
    expect(limitOf({ percent: 20 }, 0)).toBeNull();
    expect(limitOf({ count: 7, percent: 20 }, 0)).toBe(7);
    expect(limitOf({ percent: 33 }, 10)).toBe(3);
  });

  test('exceeded lists each operation whose count is above its limit, with the limit', () => {
    const t = thresholdsOf({ thresholds: { adds: { count: 2 }, blanks: { count: 0 } } });
    expect(exceeded(t, { adds: 2, deletes: 20, blanks: 0 }, 100)).toEqual([]);
    expect(exceeded(t, { adds: 3, deletes: 21, blanks: 1 }, 100)).toEqual([
      { operation: 'adds', count: 3, limit: 2 },
      { operation: 'deletes', count: 21, limit: 20 },
      { operation: 'blanks', count: 1, limit: 0 },
    ]);
    expect(reasonsText([{ operation: 'deletes', count: 80, limit: 20 }])).toBe('80 deletes (limit 20)');
  });

  test('whether a limit other than deletes is set', () => {
    expect(guardsMoreThanDeletes(thresholdsOf({}))).toBe(false);
    expect(guardsMoreThanDeletes(thresholdsOf({ thresholds: { updates: { percent: 10 } } }))).toBe(true);
    expect(guardsMoreThanDeletes(thresholdsOf({ thresholds: { updates: {} } }))).toBe(false);
  });
});
