import { Cron } from 'croner';

/**
 * Timer schedules as the Functions host reads them, evaluated in UTC:
 * - NCRONTAB with six fields `{second} {minute} {hour} {day} {month} {day-of-week}` (five fields are read
 *   with second 0, as the host does). Each field: `*`, a value, a range `a-b`, a step `* /n` `a-b/n` `a/n`,
 *   or a comma list of those. Months take JAN-DEC, days of week SUN-SAT (0 = Sunday..6). As in NCrontab,
 *   day-of-month and day-of-week must BOTH match when both are restricted.
 * - A TimeSpan `hh:mm:ss` (or `d.hh:mm:ss`): a fixed interval.
 * croner computes the occurrences; this file is the NCRONTAB layer in front of it: it checks each field and
 * refuses what NCRONTAB refuses and croner would take (day-of-week 7, `?`, `L`, `W`, `#`, `@daily`, a seventh
 * field), and hands croner the fields in plain numbers with day-of-month AND day-of-week.
 */
export interface Schedule {
  readonly expression: string;
  /** The first occurrence strictly after `after`, or undefined when there is none within 50 years. */
  next(after: Date): Date | undefined;
}

export class ScheduleError extends Error {
  constructor(
    readonly expression: string,
    message: string,
  ) {
    super(`Invalid timer schedule '${expression}': ${message}`);
    this.name = 'ScheduleError';
  }
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** Value of names[0]. */
  namesBase?: number;
}

const FIELDS: FieldSpec[] = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, namesBase: 1 },
  { name: 'day-of-week', min: 0, max: 6, names: DAYS, namesBase: 0 },
];

function parseValue(expr: string, spec: FieldSpec, text: string): number {
  const upper = text.toUpperCase();
  if (spec.names) {
    const i = spec.names.indexOf(upper);
    if (i >= 0) return i + (spec.namesBase ?? 0);
  }
  if (!/^\d+$/.test(text)) throw new ScheduleError(expr, `'${text}' is not a valid ${spec.name}.`);
  const n = Number(text);
  if (n < spec.min || n > spec.max) throw new ScheduleError(expr, `${spec.name} ${n} is outside ${spec.min}-${spec.max}.`);
  return n;
}

/**
 * Check one field as NCRONTAB reads it, naming the problem, and give it to croner in plain numbers: names
 * become their values, `*\/n` and `a/n` become explicit ranges with a step (`min-max/n`, `a-max/n`), so
 * croner reads exactly the values NCRONTAB allows.
 */
export function checkField(expr: string, spec: FieldSpec, text: string): string {
  const out: string[] = [];
  for (const item of text.split(',')) {
    if (item === '') throw new ScheduleError(expr, `empty item in the ${spec.name} field.`);
    const [rangeText, stepText, extra] = item.split('/');
    if (extra !== undefined) throw new ScheduleError(expr, `'${item}' has more than one step.`);
    if (stepText !== undefined && (!/^\d+$/.test(stepText) || Number(stepText) === 0)) {
      throw new ScheduleError(expr, `step '${stepText}' in the ${spec.name} field must be a positive number.`);
    }
    let lo: number;
    let hi: number;
    if (rangeText === '*') {
      if (stepText === undefined) {
        out.push('*');
        continue;
      }
      lo = spec.min;
      hi = spec.max;
    } else if (rangeText.includes('-')) {
      const [a, b] = rangeText.split('-');
      lo = parseValue(expr, spec, a);
      hi = parseValue(expr, spec, b);
      if (hi < lo) throw new ScheduleError(expr, `range '${rangeText}' in the ${spec.name} field runs backwards.`);
    } else {
      lo = parseValue(expr, spec, rangeText);
      // `a/n` means from a to the end of the field, every n.
      hi = stepText !== undefined ? spec.max : lo;
    }
    const step = stepText === undefined ? 1 : Number(stepText);
    // A step longer than its range leaves its first value (croner refuses such a step).
    if (step === 1 || step > hi - lo) out.push(lo === hi || step > hi - lo ? String(lo) : `${lo}-${hi}`);
    else out.push(`${lo}-${hi}/${step}`);
  }
  return out.join(',');
}

/** A fixed point to ask croner from whether an expression ever fires (any date would do). */
const EPOCH_2000 = new Date(Date.UTC(2000, 0, 1));

class CronSchedule implements Schedule {
  private readonly cron: Cron;

  constructor(readonly expression: string) {
    const parts = expression.trim().split(/\s+/);
    if (parts.length === 5) parts.unshift('0');
    if (parts.length !== 6) throw new ScheduleError(expression, `expected 6 fields (second minute hour day month day-of-week), found ${parts.length}.`);
    const fields = parts.map((p, i) => checkField(expression, FIELDS[i], p));
    // Day-of-month AND day-of-week, as NCrontab; croner's own extensions are never reached (checked above).
    this.cron = new Cron(fields.join(' '), { timezone: 'UTC', paused: true, mode: '6-part', domAndDow: true });
    // A day that no allowed month has (e.g. 30 in February only) never occurs: croner finds no run at all.
    if (!this.cron.nextRun(EPOCH_2000)) throw new ScheduleError(expression, 'the day and month fields never match a real date.');
  }

  next(after: Date): Date | undefined {
    const d = this.cron.nextRun(after);
    if (!d || d.getUTCFullYear() > after.getUTCFullYear() + 50) return undefined;
    return d;
  }
}

class IntervalSchedule implements Schedule {
  constructor(
    readonly expression: string,
    readonly intervalMs: number,
  ) {}

  next(after: Date): Date {
    return new Date(after.getTime() + this.intervalMs);
  }
}

/** Parse a `hh:mm:ss` / `d.hh:mm:ss` TimeSpan to milliseconds, or undefined when the text is not one. */
export function parseTimeSpan(text: string): number | undefined {
  const m = /^(?:(\d+)\.)?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7}))?)?$/.exec(text.trim());
  if (!m) return undefined;
  const [, d, h, mi, s, frac] = m;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) return undefined;
  const fraction = frac ? Number(`0.${frac}`) : 0;
  return ((Number(d ?? 0) * 24 + Number(h)) * 3600 + Number(mi) * 60 + Number(s ?? 0) + fraction) * 1000;
}

export function parseSchedule(expression: string): Schedule {
  const span = parseTimeSpan(expression);
  if (span !== undefined) {
    if (span <= 0) throw new ScheduleError(expression, 'the interval must be positive.');
    return new IntervalSchedule(expression, span);
  }
  return new CronSchedule(expression);
}

/**
 * The host monitors (keeps status for) schedules whose occurrences are at least a minute apart, unless the
 * function sets useMonitor.
 */
export function defaultUseMonitor(schedule: Schedule, now = new Date()): boolean {
  const a = schedule.next(now);
  const b = a && schedule.next(a);
  return !!a && !!b && b.getTime() - a.getTime() >= 60_000;
}
