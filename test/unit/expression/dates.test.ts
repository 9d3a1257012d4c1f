import { CLOCK, ExpressionEvaluationError, compileExpression, dateProblems, evaluate, parseExpression, type EvaluationClock } from '../../../lib/expression';
import { expressionErrors } from '../../../lib/api/expressions';
import { instantOf, nextBoundary, offsetAt } from '../../../lib/expression/zones';

const at = (iso: string) => Date.parse(iso);

/** Evaluates with the clock at `now`; returns the result and the instant the evaluation recorded. */
function timed(script: string, now: string, object: Record<string, unknown> = {}): { value: unknown; due: string | undefined } {
  const clock: EvaluationClock = { now: at(now) };
  const value = evaluate(parseExpression(script), { source: object, object, [CLOCK]: clock });
  return { value, due: clock.due === undefined ? undefined : new Date(clock.due).toISOString() };
}

const run = (script: string, object: Record<string, unknown> = {}) => evaluate(parseExpression(script), { source: object, object });

function failure(script: string, object: Record<string, unknown> = {}): ExpressionEvaluationError {
  try {
    run(script, object);
  } catch (err) {
    if (err instanceof ExpressionEvaluationError) return err;
    throw err;
  }
  throw new Error(`no error for ${script}`);
}

describe('time zones', () => {
  it('gives the offset of a zone at an instant, winter and summer', () => {
    expect(offsetAt(at('2026-01-15T12:00:00Z'), 'Europe/Paris')).toBe(3_600_000);
    expect(offsetAt(at('2026-07-15T12:00:00Z'), 'Europe/Paris')).toBe(7_200_000);
    expect(offsetAt(at('2026-07-15T12:00:00Z'), 'America/New_York')).toBe(-4 * 3_600_000);
    expect(offsetAt(at('2026-07-15T12:00:00Z'), 'Asia/Kolkata')).toBe(5.5 * 3_600_000);
  });

  it('changes the offset at the exact instant of a clock change', () => {
    expect(offsetAt(at('2026-03-29T00:59:59.999Z'), 'Europe/Paris')).toBe(3_600_000);
    expect(offsetAt(at('2026-03-29T01:00:00.000Z'), 'Europe/Paris')).toBe(7_200_000);
    expect(offsetAt(at('2026-11-01T05:59:59.999Z'), 'America/New_York')).toBe(-4 * 3_600_000);
    expect(offsetAt(at('2026-11-01T06:00:00.000Z'), 'America/New_York')).toBe(-5 * 3_600_000);
  });

  it('reads a wall time skipped by a clock change with the offset before it', () => {
    // Paris, 2026-03-29: 02:00 -> 03:00. 02:30 does not exist; it is read as 03:30 (01:30Z).
    const wall = { year: 2026, month: 3, day: 29, hour: 2, minute: 30, second: 0, millisecond: 0 };
    expect(new Date(instantOf(wall, 'Europe/Paris')).toISOString()).toBe('2026-03-29T01:30:00.000Z');
  });

  it('finds the next boundary of a calendar unit in a zone', () => {
    const t = at('2026-12-31T22:30:00Z'); // 23:30 in Paris
    expect(new Date(nextBoundary(t, 'day', 'Europe/Paris')).toISOString()).toBe('2026-12-31T23:00:00.000Z');
    expect(new Date(nextBoundary(t, 'year', 'Europe/Paris')).toISOString()).toBe('2026-12-31T23:00:00.000Z');
    expect(new Date(nextBoundary(t, 'hour', 'Asia/Kolkata')).toISOString()).toBe('2026-12-31T22:30:00.000Z'.replace('22:30', '23:30'));
    expect(new Date(nextBoundary(t, 'minute', 'UTC')).toISOString()).toBe('2026-12-31T22:31:00.000Z');
  });
});

describe('date helpers', () => {
  it.each<[string, unknown, Record<string, unknown>?]>([
    ['date("2026-12-09")', '2026-12-09T00:00:00.000Z'],
    ['date("2026-12-09", "Europe/Paris")', '2026-12-08T23:00:00.000Z'],
    ['date("2026-12-09T06:00", "America/New_York")', '2026-12-09T11:00:00.000Z'],
    // A text with its own zone keeps it.
    ['date("2026-12-09T06:00:00+01:00", "America/New_York")', '2026-12-09T05:00:00.000Z'],
    ['date("20261209060000Z")', '2026-12-09T06:00:00.000Z'],
    ['date(object.d, object.tz)', '2026-06-30T22:00:00.000Z', { d: '2026-07-01', tz: 'Europe/Paris' }],
    ['date(object.missing)', undefined],
    ['date("")', undefined],
    ['addDays(date("2026-12-09"), -14)', '2026-11-25T00:00:00.000Z'],
    // Across the autumn clock change: calendar days in the zone keep the wall time (06:00 both sides).
    ['addDays(date("2026-10-24T06:00", "Europe/Paris"), 2, "Europe/Paris")', '2026-10-26T05:00:00.000Z'],
    ['addDays(date("2026-10-24T06:00", "Europe/Paris"), 2)', '2026-10-26T04:00:00.000Z'],
    ['addHours(date("2026-12-09"), 6)', '2026-12-09T06:00:00.000Z'],
    ['addMinutes(date("2026-12-09"), -30)', '2026-12-08T23:30:00.000Z'],
    ['startOfDay(date("2026-12-09T10:00:00Z"), "Asia/Tokyo")', '2026-12-08T15:00:00.000Z'],
    ['endOfDay(date("2026-12-09", "Europe/Paris"), "Europe/Paris")', '2026-12-09T22:59:59.999Z'],
    ['atTime(date("2026-12-09", "Europe/Paris"), "06:00", "Europe/Paris")', '2026-12-09T05:00:00.000Z'],
    ['atTime("2026-12-09", "17:30:15")', '2026-12-09T17:30:15.000Z'],
    ['formatDate(date("2026-12-09T23:30:00Z"), "yyyy-MM-dd HH:mm", "Europe/Paris")', '2026-12-10 00:30'],
    ['formatDate("2026-12-09T23:30:00Z", "yyyy-MM-dd")', '2026-12-09'],
    ['[date("2026-12-09"), "x"]', ['2026-12-09T00:00:00.000Z', 'x']],
    ['date("2026-12-09") + ""', '2026-12-09T00:00:00.000Z'],
    ['date("2026-12-10") - date("2026-12-09")', 86_400_000],
    ['date("2026-12-09") === date("2026-12-09T01:00:00+01:00")', true],
    ['date("2026-12-09") < "2026-12-10"', true],
    ['date("2026-12-09") < "not a date"', false],
    ['date("2026-12-09") != "not a date"', true],
    ['date("2026-12-09") == null', false],
    ['typeof date("2026-12-09")', 'object'],
  ])('%s', (script, expected, object = {}) => {
    expect(run(script, object)).toEqual(expected);
  });

  it.each<[string, string, string, Record<string, unknown>?]>([
    ['date("yesterday")', 'invalid_argument', 'date() could not read the value as a date'],
    ['date("2026-02-30")', 'invalid_argument', 'date() could not read the value as a date'],
    [
      'date("2026-12-09", object.tz)',
      'invalid_argument',
      'date() was given a time zone that is not known (an IANA name such as Europe/Paris)',
      { tz: 'Mars/Olympus' },
    ],
    ['date("2026-12-09", 5)', 'type_error', 'date() expects a time zone name, not a number'],
    ['atTime("2026-12-09", object.t)', 'invalid_argument', 'atTime() expects a time of day such as "06:00" or "17:30:00"', { t: '25:00' }],
    ['addDays("2026-12-09", "x")', 'invalid_argument', 'addDays() expects a number'],
    ['date("2026-12-09").trim()', 'type_error', "'trim' is not a method of a date"],
    ['date("2026-12-09").ms', 'forbidden', 'Cannot read properties of a date of this kind'],
    ['now()', 'invalid_argument', 'now() has no clock here: it can be used in flow rules, computed attributes and provisioning conditions'],
  ])('%s fails', (script, code, reason, object = {}) => {
    expect(failure(script, object)).toMatchObject({ code, reason });
  });
});

describe('now() and the instant a result changes', () => {
  const person = { hireDate: '2026-12-09', terminationDate: '2027-03-31', tz: 'Europe/Paris' };
  const provision = 'now() >= addDays(date(object.hireDate, object.tz), -14)';
  const enabled =
    'now() >= atTime(date(object.hireDate, object.tz), "06:00", object.tz) && !(now() > endOfDay(date(object.terminationDate, object.tz), object.tz))';

  it('reads the clock of the scope, never the host', () => {
    expect(timed('formatDate(now(), "yyyy-MM-dd HH:mm:ss")', '2030-01-02T03:04:05Z').value).toBe('2030-01-02 03:04:05');
  });

  it('records when a provisioning condition starts to hold', () => {
    expect(timed(provision, '2026-11-20T12:00:00Z', person)).toEqual({ value: false, due: '2026-11-24T23:00:00.000Z' });
    // From that instant on the condition holds and nothing later changes it.
    expect(timed(provision, '2026-11-24T23:00:00Z', person)).toEqual({ value: true, due: undefined });
  });

  it('records the start instant, then the end of the last day in the person zone', () => {
    expect(timed(enabled, '2026-11-30T00:00:00Z', person)).toEqual({ value: false, due: '2026-12-09T05:00:00.000Z' });
    // At the start instant: enabled, and the next change is midnight after the last day (Paris, summer time).
    expect(timed(enabled, '2026-12-09T05:00:00Z', person)).toEqual({ value: true, due: '2027-03-31T22:00:00.000Z' });
    expect(timed(enabled, '2027-03-31T21:59:59.999Z', person).value).toBe(true);
    expect(timed(enabled, '2027-03-31T22:00:00Z', person)).toEqual({ value: false, due: undefined });
  });

  it('moves the instant by the offset of a date computed from now()', () => {
    // now + 14 days >= hire: holds from 14 days before the hire date.
    expect(timed('addDays(now(), 14) >= date(object.hireDate)', '2026-11-01T00:00:00Z', person).due).toBe('2026-11-25T00:00:00.000Z');
    // Strict comparisons change one millisecond later.
    expect(timed('now() > date(object.hireDate)', '2026-11-01T00:00:00Z', person).due).toBe('2026-12-09T00:00:00.001Z');
    expect(timed('date(object.hireDate) < now()', '2026-11-01T00:00:00Z', person).due).toBe('2026-12-09T00:00:00.001Z');
    expect(timed('date(object.hireDate) <= now()', '2026-11-01T00:00:00Z', person).due).toBe('2026-12-09T00:00:00.000Z');
    // Two dates that both move with now never cross.
    expect(timed('addDays(now(), 1) > now()', '2026-11-01T00:00:00Z').due).toBeUndefined();
  });

  it('records the next day, hour or second of a value computed from the calendar of now()', () => {
    expect(timed('startOfDay(now(), "Europe/Paris")', '2026-12-09T10:00:00Z')).toEqual({ value: '2026-12-08T23:00:00.000Z', due: '2026-12-09T23:00:00.000Z' });
    expect(timed('formatDate(now(), "yyyy-MM-dd", "Europe/Paris")', '2026-12-09T10:00:00Z').due).toBe('2026-12-09T23:00:00.000Z');
    expect(timed('formatDate(now(), "HH:mm")', '2026-12-09T10:00:30Z').due).toBe('2026-12-09T10:01:00.000Z');
  });

  it('records nothing for a missing date (the comparison is false)', () => {
    expect(timed('now() > endOfDay(date(object.terminationDate, object.tz), object.tz)', '2026-11-01T00:00:00Z', { tz: 'UTC' })).toEqual({
      value: false,
      due: undefined,
    });
  });

  it('records the earliest instant of one evaluation, over every comparison', () => {
    const script = `${provision} ? (${enabled} ? "enabled" : "disabled") : "none"`;
    expect(timed(script, '2026-12-01T00:00:00Z', person)).toEqual({ value: 'disabled', due: '2026-12-09T05:00:00.000Z' });
  });

  it('a compiled script says whether it reads the clock', () => {
    expect(compileExpression(provision).usesNow).toBe(true);
    expect(compileExpression('date(object.hireDate)').usesNow).toBe(false);
  });
});

describe('checks when a script is saved', () => {
  it('refuses a literal time zone that is not known, and a literal time atTime cannot read', () => {
    expect(dateProblems(parseExpression('startOfDay(now(), "Europe/Pari") < atTime(source, "6h")')).map((p) => p.message)).toEqual([
      "startOfDay() names the time zone 'Europe/Pari', which is not known (use an IANA name such as Europe/Paris)",
      'atTime() expects a time of day such as "06:00" or "17:30:00"',
    ]);
    expect(dateProblems(parseExpression('date(source, object.tz)'))).toEqual([]);
  });

  it('takes now() only where the engine gives its clock', () => {
    expect(expressionErrors('now() > date(source)', '/transformScript', 'outboundFlow')).toEqual([]);
    expect(expressionErrors('now() > date(object.hireDate)', '/config/provisioningCondition', 'provisioningCondition')).toEqual([]);
    expect(expressionErrors('now() > date(source)', '/transformScript', 'rule', true)).toEqual([]);
    expect(expressionErrors('now() > date(source)', '/transformScript', 'rule')).toEqual([
      { path: '/transformScript', message: 'now() can only be used in flow rules, computed attributes (MeshComposerRule) and provisioning conditions' },
    ]);
    expect(expressionErrors('date(source, "Nowhere/City")', '/transformScript', 'rule')).toEqual([
      {
        path: '/transformScript',
        message: "date() names the time zone 'Nowhere/City', which is not known (use an IANA name such as Europe/Paris) at line 1, column 14 (offset 13)",
      },
    ]);
  });
});
