import { finestUnit, formatIn, toEpochMsIn } from './dates';
import { DateValue, dateOf, noteDue } from './dateValue';
import type { HelperImpl } from './values';
import { checkLength, describeType, fail, toNum, type EvalContext } from './values';
import { instantOf, isKnownZone, nextDayIn, nextBoundary, startOfDayIn, wallTimeOf } from './zones';

/**
 * The date helpers (docs/expressions.md, "Dates and time zones"). A missing value (null, undefined, '') gives
 * undefined, so a person without a termination date has no end-of-day; a value that is not a date is an error.
 * A zone argument is an IANA name (`Europe/Paris`); missing, it is UTC. Helpers of a date that moves with now()
 * (`startOfDay(now(), zone)`) record in the clock the next instant their result changes.
 */

const DAY_MS = 86_400_000;
const isNullish = (value: unknown): value is null | undefined => value === null || value === undefined;

function zoneOf(ctx: EvalContext, value: unknown, helper: string): string {
  if (isNullish(value)) return 'UTC';
  if (typeof value !== 'string') return fail(ctx, 'type_error', `${helper}() expects a time zone name, not ${describeType(value)}`);
  if (!isKnownZone(value)) fail(ctx, 'invalid_argument', `${helper}() was given a time zone that is not known (an IANA name such as Europe/Paris)`);
  return value;
}

/** The date of `value` (a date value, or a text or number read as one, wall time in `zone`), undefined when missing. */
function dateArg(ctx: EvalContext, value: unknown, helper: string, zone = 'UTC'): DateValue | undefined {
  if (isNullish(value) || value === '') return undefined;
  if (value instanceof DateValue) return value;
  const ms = value instanceof Date ? value.getTime() : toEpochMsIn(value, zone);
  const d = ms === undefined ? undefined : dateOf(ms);
  if (!d) fail(ctx, 'invalid_argument', `${helper}() could not read the value as a date`);
  return d;
}

function amount(ctx: EvalContext, value: unknown, helper: string): number {
  const n = toNum(ctx, value);
  if (!Number.isFinite(n)) fail(ctx, 'invalid_argument', `${helper}() expects a number`);
  return n;
}

/** A date moved to `ms`, still moving with now when `from` did. */
function moved(ctx: EvalContext, from: DateValue, ms: number, helper: string): DateValue {
  const d = dateOf(ms, from.fromNow === undefined ? undefined : from.fromNow + (ms - from.ms));
  if (!d) fail(ctx, 'invalid_argument', `${helper}() gives a date out of range`);
  return d;
}

/**
 * A result computed from the calendar day of `d` in `zone`: fixed for the day, so when `d` moves with now the
 * result changes when now reaches the next day there.
 */
function dayBound(ctx: EvalContext, d: DateValue, zone: string, ms: number): DateValue {
  if (d.fromNow !== undefined) noteDue(ctx.clock, nextDayIn(d.ms, zone) - d.fromNow);
  return dateOf(ms) ?? fail(ctx, 'invalid_argument', 'The date is out of range');
}

const TIME = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/;

export const DATE_HELPERS: ReadonlyArray<[string, HelperImpl]> = [
  [
    'now',
    (ctx) => {
      if (!ctx.clock) fail(ctx, 'invalid_argument', 'now() has no clock here: it can be used in flow rules, computed attributes and provisioning conditions');
      return new DateValue(ctx.clock.now, 0);
    },
  ],
  ['date', (ctx, [value, zone]) => dateArg(ctx, value, 'date', zoneOf(ctx, zone, 'date'))],
  [
    'addDays',
    (ctx, [value, days, zone]) => {
      const d = dateArg(ctx, value, 'addDays');
      if (!d) return undefined;
      const n = amount(ctx, days, 'addDays');
      if (zone === undefined) return moved(ctx, d, d.ms + n * DAY_MS, 'addDays');
      // In a zone: calendar days, the wall-clock time kept (a day across a clock change is 23 or 25 hours).
      const z = zoneOf(ctx, zone, 'addDays');
      const w = wallTimeOf(d.ms, z);
      return moved(ctx, d, instantOf({ ...w, day: w.day + Math.trunc(n) }, z), 'addDays');
    },
  ],
  [
    'addHours',
    (ctx, [value, hours]) => {
      const d = dateArg(ctx, value, 'addHours');
      return d && moved(ctx, d, d.ms + amount(ctx, hours, 'addHours') * 3_600_000, 'addHours');
    },
  ],
  [
    'addMinutes',
    (ctx, [value, minutes]) => {
      const d = dateArg(ctx, value, 'addMinutes');
      return d && moved(ctx, d, d.ms + amount(ctx, minutes, 'addMinutes') * 60_000, 'addMinutes');
    },
  ],
  [
    'startOfDay',
    (ctx, [value, zone]) => {
      const z = zoneOf(ctx, zone, 'startOfDay');
      const d = dateArg(ctx, value, 'startOfDay', z);
      return d && dayBound(ctx, d, z, startOfDayIn(d.ms, z));
    },
  ],
  [
    'endOfDay',
    (ctx, [value, zone]) => {
      const z = zoneOf(ctx, zone, 'endOfDay');
      const d = dateArg(ctx, value, 'endOfDay', z);
      // The day's last millisecond: `now() > endOfDay(d, zone)` turns true at midnight after it.
      return d && dayBound(ctx, d, z, nextDayIn(d.ms, z) - 1);
    },
  ],
  [
    'atTime',
    (ctx, [value, time, zone]) => {
      const z = zoneOf(ctx, zone, 'atTime');
      const d = dateArg(ctx, value, 'atTime', z);
      if (!d) return undefined;
      const m = typeof time === 'string' ? TIME.exec(time) : null;
      const [hour, minute, second] = m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : [NaN, NaN, NaN];
      if (!m || hour > 23 || minute > 59 || second > 59) fail(ctx, 'invalid_argument', 'atTime() expects a time of day such as "06:00" or "17:30:00"');
      const w = wallTimeOf(d.ms, z);
      return dayBound(ctx, d, z, instantOf({ ...w, hour, minute, second, millisecond: 0 }, z));
    },
  ],
  [
    'formatDate',
    (ctx, [value, pattern, zone]) => {
      const z = zoneOf(ctx, zone, 'formatDate');
      const d = dateArg(ctx, value, 'formatDate');
      if (!d) return undefined;
      if (typeof pattern !== 'string') fail(ctx, 'type_error', `formatDate() expects a pattern text, not ${describeType(pattern)}`);
      // Every token grows by at most 2 characters ('MM' -> '12'), so the pattern length bounds the result.
      checkLength(ctx, pattern.length * 2);
      const unit = finestUnit(pattern);
      if (d.fromNow !== undefined && unit) noteDue(ctx.clock, nextBoundary(d.ms, unit, z) - d.fromNow);
      return formatIn(d.ms, pattern, z);
    },
  ],
];
