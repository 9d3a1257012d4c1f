import { cronSchedule, isTimeZone, parseCron } from '../../../lib/schedules/cron';

const paths = (cron: string, timeZone = 'UTC', min = 60) => {
  const r = parseCron(cron, timeZone, min);
  return 'errors' in r ? r.errors.map((e) => e.path) : [];
};
/** The next `n` occurrences after `from`, as ISO strings. */
const nextN = (cron: string, timeZone: string, from: string, n: number) => {
  const s = cronSchedule(cron, timeZone);
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < n; i++) {
    at = s.next(at)!;
    out.push(at.toISOString());
  }
  return out;
};

describe('cron: NCRONTAB six and five fields', () => {
  it('reads six fields with seconds and five fields with second 0', () => {
    expect(nextN('15 30 9 * * *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-01T09:30:15.000Z', '2026-01-02T09:30:15.000Z']);
    expect(nextN('30 9 * * *', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T09:30:00.000Z']);
    const five = parseCron('30 9 * * *', 'UTC');
    expect('schedule' in five && five.schedule.cron).toBe('0 30 9 * * *');
  });

  it('takes names, ranges, steps and lists; day and day-of-week must both match (NCrontab)', () => {
    // 2026-01-13 is a Tuesday: the 13th that is also a Friday is 2026-02-13.
    expect(nextN('0 0 8 13 * FRI', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-02-13T08:00:00.000Z']);
    expect(nextN('0 */20 9-10 * JAN-MAR MON-FRI', 'UTC', '2026-01-02T00:00:00Z', 3)).toEqual([
      '2026-01-02T09:00:00.000Z',
      '2026-01-02T09:20:00.000Z',
      '2026-01-02T09:40:00.000Z',
    ]);
  });

  it('refuses what does not parse or is not NCRONTAB, naming cron', () => {
    for (const bad of [
      '',
      'bad',
      '* * * *',
      '0 0 0 * * * *',
      '0 0 * * 8',
      '0 61 * * * *',
      '0 0 L * *',
      '0 0 ? * MON',
      '0 0 * * 1#2',
      '0 0 1W * *',
      'x 0 * * * *',
    ]) {
      expect([bad, paths(bad)]).toEqual([bad, ['/cron']]);
    }
  });

  it('refuses a cron that fires more than once a minute, unless the minimum is lowered', () => {
    expect(paths('* * * * * *')).toEqual(['/cron']);
    expect(paths('0,30 * * * * *')).toEqual(['/cron']);
    expect(paths('*/10 * * * * *')).toEqual(['/cron']);
    expect(paths('0 * * * * *')).toEqual([]);
    expect(paths('* * * * *')).toEqual([]);
    expect(paths('*/10 * * * * *', 'UTC', 5)).toEqual([]);
    expect(paths('*/2 * * * * *', 'UTC', 5)).toEqual(['/cron']);
    expect(paths('0,58 * * * * *', 'UTC', 5)).toEqual(['/cron']); // 58 -> 0 of the next minute is 2 s
  });

  it('refuses a cron that never fires', () => {
    expect(paths('0 0 0 30 2 *')).toEqual(['/cron']);
  });

  it('checks the IANA time zone, naming timeZone', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    expect(paths('0 0 * * *', 'Mars/Olympus')).toEqual(['/timeZone']);
    expect(paths('nope', 'Mars/Olympus')).toEqual(['/timeZone', '/cron']);
  });
});

describe('cron: daylight-saving changes neither skip nor double a tick', () => {
  it('America/New_York spring forward: 02:30 does not exist on 2026-03-08, the tick runs at 03:00 EDT', () => {
    expect(nextN('0 30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT, first instant after the gap
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
  });

  it('America/New_York fall back: 01:30 occurs twice on 2026-11-01, the tick runs once', () => {
    expect(nextN('0 30 1 * * *', 'America/New_York', '2026-10-31T00:00:00Z', 3)).toEqual([
      '2026-10-31T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T05:30:00.000Z', // the first 01:30 (EDT); not again at 06:30Z (01:30 EST)
      '2026-11-02T06:30:00.000Z', // 01:30 EST
    ]);
  });

  it('Europe/Berlin spring forward: 02:15 does not exist on 2026-03-29, the tick runs at 03:00 CEST', () => {
    expect(nextN('0 15 2 * * *', 'Europe/Berlin', '2026-03-28T00:00:00Z', 3)).toEqual([
      '2026-03-28T01:15:00.000Z', // 02:15 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-30T00:15:00.000Z', // 02:15 CEST
    ]);
  });

  it('Europe/Berlin fall back: 02:15 occurs twice on 2026-10-25, the tick runs once; weekday lists too', () => {
    expect(nextN('0 15 2 * * *', 'Europe/Berlin', '2026-10-24T00:00:00Z', 3)).toEqual([
      '2026-10-24T00:15:00.000Z', // 02:15 CEST
      '2026-10-25T00:15:00.000Z', // the first 02:15 (CEST) only
      '2026-10-26T01:15:00.000Z', // 02:15 CET
    ]);
    expect(nextN('0 0 2,3 * * SUN', 'Europe/Berlin', '2026-10-24T00:00:00Z', 2)).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z']);
  });

  it('an interval schedule follows elapsed time across the change (every 30 minutes, no gap, no double)', () => {
    const ticks = nextN('0 */30 * * * *', 'Europe/Berlin', '2026-10-25T00:00:00Z', 4).map((t) => Date.parse(t));
    expect(ticks.slice(1).map((t, i) => (t - ticks[i]) / 60_000)).toEqual([30, 30, 30]);
    const spring = nextN('0 */30 * * * *', 'America/New_York', '2026-03-08T06:00:00Z', 4).map((t) => Date.parse(t));
    expect(spring.slice(1).map((t, i) => (t - spring[i]) / 60_000)).toEqual([30, 30, 30]);
  });

  it('previous(): the latest occurrence at or before a moment (past-due ticks)', () => {
    const s = cronSchedule('0 0 * * * *', 'UTC');
    expect(s.previous(new Date('2026-01-01T10:30:00Z'))!.toISOString()).toBe('2026-01-01T10:00:00.000Z');
    expect(s.previous(new Date('2026-01-01T10:00:00Z'))!.toISOString()).toBe('2026-01-01T10:00:00.000Z');
  });
});
