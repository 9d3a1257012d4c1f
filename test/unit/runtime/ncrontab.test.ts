import { defaultUseMonitor, parseSchedule, parseTimeSpan, ScheduleError } from '../../../lib/runtime/timers/ncrontab';
import { pastDueOccurrence, timerInput } from '../../../lib/runtime/timers';

const at = (iso: string) => new Date(iso);
const next = (expr: string, after: string) => parseSchedule(expr).next(at(after))?.toISOString();

/** The first n occurrences after a time. */
function series(expr: string, after: string, n: number): string[] {
  const s = parseSchedule(expr);
  const out: string[] = [];
  let t = at(after);
  for (let i = 0; i < n; i++) {
    t = s.next(t)!;
    out.push(t.toISOString());
  }
  return out;
}

describe('NCRONTAB schedules (UTC)', () => {
  it('every five minutes, strictly after the given time', () => {
    expect(series('0 */5 * * * *', '2024-03-10T01:58:00Z', 3)).toEqual(['2024-03-10T02:00:00.000Z', '2024-03-10T02:05:00.000Z', '2024-03-10T02:10:00.000Z']);
    expect(next('0 */5 * * * *', '2024-03-10T02:00:00Z')).toBe('2024-03-10T02:05:00.000Z');
    expect(next('0 */5 * * * *', '2024-03-10T01:59:59.999Z')).toBe('2024-03-10T02:00:00.000Z');
  });

  it('seconds field with steps and lists', () => {
    expect(series('*/20 * * * * *', '2024-01-01T00:00:05Z', 3)).toEqual(['2024-01-01T00:00:20.000Z', '2024-01-01T00:00:40.000Z', '2024-01-01T00:01:00.000Z']);
    expect(series('5,10 0 * * * *', '2024-01-01T00:00:07Z', 2)).toEqual(['2024-01-01T00:00:10.000Z', '2024-01-01T01:00:05.000Z']);
  });

  it('ranges with steps and a start with a step', () => {
    expect(series('0 0 9-17/4 * * *', '2024-01-01T00:00:00Z', 4)).toEqual([
      '2024-01-01T09:00:00.000Z',
      '2024-01-01T13:00:00.000Z',
      '2024-01-01T17:00:00.000Z',
      '2024-01-02T09:00:00.000Z',
    ]);
    expect(series('0 45/10 * * * *', '2024-01-01T00:00:00Z', 3)).toEqual(['2024-01-01T00:45:00.000Z', '2024-01-01T00:55:00.000Z', '2024-01-01T01:45:00.000Z']);
  });

  it('names for months and days of week, weekdays only', () => {
    expect(next('0 30 9 * * MON-FRI', '2024-06-07T10:00:00Z')).toBe('2024-06-10T09:30:00.000Z'); // Friday after 9:30 -> Monday
    expect(next('0 0 0 1 jan,JUL *', '2024-02-01T00:00:00Z')).toBe('2024-07-01T00:00:00.000Z');
    expect(next('0 0 12 * * 0', '2024-06-07T00:00:00Z')).toBe('2024-06-09T12:00:00.000Z'); // Sunday
  });

  it('day 31 skips short months; 29 February waits for a leap year', () => {
    expect(series('0 0 0 31 * *', '2024-01-31T00:00:00Z', 3)).toEqual(['2024-03-31T00:00:00.000Z', '2024-05-31T00:00:00.000Z', '2024-07-31T00:00:00.000Z']);
    expect(next('0 0 0 29 2 *', '2024-03-01T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    expect(next('0 0 0 28-31 2 *', '2023-02-28T00:00:00Z')).toBe('2024-02-28T00:00:00.000Z');
  });

  it('day-of-month and day-of-week must both match (NCrontab semantics)', () => {
    // The next Friday the 13th after 2024-01-01 is September 2024.
    expect(next('0 0 0 13 * FRI', '2024-01-01T00:00:00Z')).toBe('2024-09-13T00:00:00.000Z');
  });

  it('rolls over the end of a year', () => {
    expect(next('59 59 23 31 12 *', '2024-12-31T23:59:59Z')).toBe('2025-12-31T23:59:59.000Z');
    expect(next('0 0 0 * * *', '2024-12-31T23:59:59Z')).toBe('2025-01-01T00:00:00.000Z');
  });

  it('reads five-field expressions with second 0', () => {
    expect(next('*/15 * * * *', '2024-01-01T00:01:00Z')).toBe('2024-01-01T00:15:00.000Z');
  });

  it('rejects malformed expressions naming the problem', () => {
    expect(() => parseSchedule('0 0 * *')).toThrow(ScheduleError);
    expect(() => parseSchedule('0 60 * * * *')).toThrow(/minute 60 is outside 0-59/);
    expect(() => parseSchedule('0 0 0 * * 7')).toThrow(/day-of-week 7/);
    expect(() => parseSchedule('0 */0 * * * *')).toThrow(/step/);
    expect(() => parseSchedule('0 0 10-5 * * *')).toThrow(/backwards/);
    expect(() => parseSchedule('0 0 0 30 2 *')).toThrow(/never match/);
    expect(() => parseSchedule('0 0 0 * FOO *')).toThrow(/not a valid month/);
  });
});

describe('NCRONTAB where croner alone would differ', () => {
  it('refuses what croner accepts but NCRONTAB does not', () => {
    expect(() => parseSchedule('0 0 0 * * 7')).toThrow(/day-of-week 7 is outside 0-6/);
    expect(() => parseSchedule('0 0 0 ? * MON')).toThrow(/'\?' is not a valid day/);
    expect(() => parseSchedule('0 0 0 L * *')).toThrow(/'L' is not a valid day/);
    expect(() => parseSchedule('0 0 0 15W * *')).toThrow(/'15W' is not a valid day/);
    expect(() => parseSchedule('0 0 0 * * 5#2')).toThrow(/'5#2' is not a valid day-of-week/);
    expect(() => parseSchedule('0 0 0 * * FRIL')).toThrow(/not a valid day-of-week/);
    expect(() => parseSchedule('@daily')).toThrow(/expected 6 fields .* found 1/);
    expect(() => parseSchedule('0 0 0 1 1 * 2030')).toThrow(/expected 6 fields .* found 7/);
    expect(next('0 0 1 1 *', '2024-06-01T00:00:00Z')).toBe('2025-01-01T00:00:00.000Z');
  });

  it('steps from the start of the field and from a value to its end, as NCRONTAB reads them', () => {
    expect(series('0 0 0 */10 * *', '2024-01-01T00:00:00Z', 4)).toEqual([
      '2024-01-11T00:00:00.000Z',
      '2024-01-21T00:00:00.000Z',
      '2024-01-31T00:00:00.000Z',
      '2024-02-01T00:00:00.000Z',
    ]);
    expect(series('0 0 0 1 */4 *', '2024-01-01T00:00:00Z', 3)).toEqual(['2024-05-01T00:00:00.000Z', '2024-09-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z']);
    expect(series('0 0 0 * * 1/2', '2024-01-01T00:00:00Z', 4)).toEqual([
      '2024-01-03T00:00:00.000Z',
      '2024-01-05T00:00:00.000Z',
      '2024-01-08T00:00:00.000Z',
      '2024-01-10T00:00:00.000Z',
    ]);
    expect(series('30/15 0 0 1 1 *', '2024-01-01T00:00:00Z', 3)).toEqual(['2024-01-01T00:00:30.000Z', '2024-01-01T00:00:45.000Z', '2025-01-01T00:00:30.000Z']);
  });

  it('a step longer than its range leaves its first value (croner refuses such a step)', () => {
    expect(series('0 0 0 * * */8', '2024-01-01T00:00:00Z', 2)).toEqual(['2024-01-07T00:00:00.000Z', '2024-01-14T00:00:00.000Z']);
    expect(series('10-20/30 0 0 1 1 *', '2024-01-01T00:00:00Z', 2)).toEqual(['2024-01-01T00:00:10.000Z', '2025-01-01T00:00:10.000Z']);
  });

  it('day-of-month and day-of-week both restricted: AND, where croner by default would take either', () => {
    // Either (croner's default) would fire on 2024-01-01, a Monday; both: the first Monday the 13th.
    expect(next('0 0 0 13 * MON', '2023-12-31T00:00:00Z')).toBe('2024-05-13T00:00:00.000Z');
    expect(next('0 0 0 29 2 MON', '2024-03-01T00:00:00Z')).toBe('2044-02-29T00:00:00.000Z');
  });

  it('names in any case and in ranges, the same as their numbers', () => {
    expect(series('0 0 0 * * mon-wed', '2024-01-01T00:00:00Z', 3)).toEqual(series('0 0 0 * * 1-3', '2024-01-01T00:00:00Z', 3));
    expect(series('0 0 0 1 Feb-Apr/2 *', '2024-01-01T00:00:00Z', 2)).toEqual(['2024-02-01T00:00:00.000Z', '2024-04-01T00:00:00.000Z']);
  });
});

describe('TimeSpan schedules', () => {
  it('parses hh:mm:ss and d.hh:mm:ss', () => {
    expect(parseTimeSpan('00:00:30')).toBe(30_000);
    expect(parseTimeSpan('01:02:03')).toBe(3_723_000);
    expect(parseTimeSpan('1.00:00:00')).toBe(86_400_000);
    expect(parseTimeSpan('0 */5 * * * *')).toBeUndefined();
    expect(parseTimeSpan('24:00:00')).toBeUndefined();
  });

  it('is a fixed interval from the given time', () => {
    expect(next('00:05:00', '2024-01-01T00:00:07Z')).toBe('2024-01-01T00:05:07.000Z');
    expect(() => parseSchedule('00:00:00')).toThrow(/positive/);
  });
});

describe('monitoring and past-due', () => {
  it('monitors by default only schedules at least a minute apart', () => {
    expect(defaultUseMonitor(parseSchedule('0 */5 * * * *'))).toBe(true);
    expect(defaultUseMonitor(parseSchedule('*/10 * * * * *'))).toBe(false);
    expect(defaultUseMonitor(parseSchedule('00:00:30'))).toBe(false);
  });

  it('is past due when the recorded next occurrence has gone by', () => {
    const status = { Last: '2024-01-01T00:00:00.000Z', Next: '2024-01-01T00:05:00.000Z', LastUpdated: '2024-01-01T00:00:01.000Z' };
    expect(pastDueOccurrence(status, at('2024-01-01T00:04:59Z'))).toBeUndefined();
    expect(pastDueOccurrence(status, at('2024-01-01T00:06:00Z'))?.toISOString()).toBe('2024-01-01T00:05:00.000Z');
    expect(pastDueOccurrence(undefined, at('2024-01-01T00:06:00Z'))).toBeUndefined();
  });

  it('builds the timer input the host sends', () => {
    expect(timerInput(undefined, true)).toEqual({ Schedule: { AdjustForDST: true }, ScheduleStatus: null, IsPastDue: true });
  });
});
