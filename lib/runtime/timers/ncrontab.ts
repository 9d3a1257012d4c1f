/**
 * Timer schedules as the Functions host reads them, evaluated in UTC:
 * - NCRONTAB with six fields `{second} {minute} {hour} {day} {month} {day-of-week}` (five fields are read
 *   with second 0, as the host does). Each field: `*`, a value, a range `a-b`, a step `* /n` `a-b/n` `a/n`,
 *   or a comma list of those. Months take JAN-DEC, days of week SUN-SAT (0 = Sunday..6). As in NCrontab,
 *   day-of-month and day-of-week must BOTH match when both are restricted.
 * - A TimeSpan `hh:mm:ss` (or `d.hh:mm:ss`): a fixed interval.
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

/** Parse one field into the sorted set of values it allows. */
export function parseField(expr: string, spec: FieldSpec, text: string): { values: boolean[]; any: boolean } {
  const values = new Array<boolean>(spec.max + 1).fill(false);
  let any = false;
  for (const item of text.split(',')) {
    if (item === '') throw new ScheduleError(expr, `empty item in the ${spec.name} field.`);
    const [rangeText, stepText, extra] = item.split('/');
    if (extra !== undefined) throw new ScheduleError(expr, `'${item}' has more than one step.`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0) throw new ScheduleError(expr, `step '${stepText}' in the ${spec.name} field must be a positive number.`);
      step = Number(stepText);
    }
    let lo: number;
    let hi: number;
    if (rangeText === '*') {
      lo = spec.min;
      hi = spec.max;
      if (step === 1) any = true;
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
    for (let v = lo; v <= hi; v += step) values[v] = true;
  }
  return { values, any };
}

const DAY_MS = 86_400_000;
const daysInMonth = (year: number, month0: number) => new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();

class CronSchedule implements Schedule {
  private readonly fields: { values: boolean[]; any: boolean }[];

  constructor(readonly expression: string) {
    const parts = expression.trim().split(/\s+/);
    if (parts.length === 5) parts.unshift('0');
    if (parts.length !== 6) throw new ScheduleError(expression, `expected 6 fields (second minute hour day month day-of-week), found ${parts.length}.`);
    this.fields = parts.map((p, i) => parseField(expression, FIELDS[i], p));
    const [, , , day, month] = this.fields;
    // A day that no allowed month has (e.g. 30 in February only) never occurs.
    const possible = day.values.some((ok, d) => ok && month.values.some((m, mi) => m && d <= [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mi - 1]));
    if (!possible) throw new ScheduleError(expression, 'the day and month fields never match a real date.');
  }

  next(after: Date): Date | undefined {
    const [sec, min, hour, day, month, dow] = this.fields;
    let t = Math.floor(after.getTime() / 1000) * 1000 + 1000;
    const limitYear = after.getUTCFullYear() + 50;
    for (;;) {
      const d = new Date(t);
      const y = d.getUTCFullYear();
      if (y > limitYear) return undefined;
      const mo = d.getUTCMonth();
      if (!month.values[mo + 1]) {
        t = Date.UTC(y, mo + 1, 1);
        continue;
      }
      const dom = d.getUTCDate();
      if (!day.values[dom] || !dow.values[d.getUTCDay()] || dom > daysInMonth(y, mo)) {
        t = Date.UTC(y, mo, dom) + DAY_MS;
        continue;
      }
      const h = d.getUTCHours();
      if (!hour.values[h]) {
        t = Date.UTC(y, mo, dom, h + 1);
        continue;
      }
      const m = d.getUTCMinutes();
      if (!min.values[m]) {
        t = Date.UTC(y, mo, dom, h, m + 1);
        continue;
      }
      const s = d.getUTCSeconds();
      if (!sec.values[s]) {
        let ns = s + 1;
        while (ns < 60 && !sec.values[ns]) ns++;
        t = Date.UTC(y, mo, dom, h, m, ns);
        continue;
      }
      return d;
    }
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
