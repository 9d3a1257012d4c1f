import { Cron } from 'croner';
import type { FieldError } from '../core/errors';

/**
 * Schedule expressions: NCRONTAB as the Functions timer trigger reads it, with six fields
 * `{second} {minute} {hour} {day} {month} {day-of-week}`, or five (`{minute} ... {day-of-week}`, second 0),
 * evaluated in an IANA time zone. croner does the parsing and the next occurrence; this file only narrows it
 * to NCRONTAB (no `?`, `L`, `W`, `#`, no year field; day-of-month AND day-of-week, as NCrontab does) and
 * checks the minimum interval.
 *
 * Daylight-saving changes (croner's `fixedTimeRule: 'no-wildcard'`): a schedule at fixed wall-clock times
 * (no wildcard or step in second, minute and hour, e.g. `0 30 2 * * *`) fires once on a day whose 02:30 occurs
 * twice (the first one), and at the first instant after the gap on a day where 02:30 does not exist (03:00),
 * so a change neither skips nor doubles a tick. An interval schedule (`0 *\/15 * * * *`) follows real time:
 * every 15 minutes of elapsed time, across the change.
 */
export interface CronSchedule {
  readonly cron: string;
  readonly timeZone: string;
  /** The first occurrence strictly after `after`, or null when there is none. */
  next(after: Date): Date | null;
  /** The latest occurrence at or before `at`, or null. */
  previous(at: Date): Date | null;
}

const NAMES_MONTH = /^(JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)$/i;
const NAMES_DOW = /^(SUN|MON|TUE|WED|THU|FRI|SAT)$/i;
const NUMERIC = /^[0-9*,/-]+$/;

/** True when `timeZone` is an IANA time zone this runtime knows. */
export function isTimeZone(timeZone: string): boolean {
  if (!timeZone || timeZone.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone }).format(0);
    return true;
  } catch {
    return false;
  }
}

function fieldsOf(cron: string): string[] | string {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6)
    return `must have six fields ({second} {minute} {hour} {day} {month} {day-of-week}) or five, not ${fields.length}`;
  const six = fields.length === 6 ? fields : ['0', ...fields];
  const named: [number, RegExp][] = [
    [4, NAMES_MONTH],
    [5, NAMES_DOW],
  ];
  for (let i = 0; i < 6; i++) {
    const names = named.find(([k]) => k === i)?.[1];
    const ok = names ? six[i].split(/[,/-]/).every((part) => part === '' || NUMERIC.test(part) || names.test(part)) : NUMERIC.test(six[i]);
    if (!ok) return `field ${i + 1} ('${six[i]}') is not NCRONTAB: only numbers, *, ranges a-b, steps /n and lists${names ? ' (and names)' : ''}`;
  }
  return six;
}

function croner(six: string[], timeZone: string): Cron {
  return new Cron(six.join(' '), { timezone: timeZone, paused: true, mode: '6-part', domAndDow: true, sloppyRanges: true, fixedTimeRule: 'no-wildcard' });
}

/**
 * The shortest gap, in seconds, between two firings within one minute (60 when the second field has one
 * value): croner expands the second field over one minute.
 */
function secondsGap(secondField: string): number {
  const c = croner([secondField, '*', '*', '*', '*', '*'], 'UTC');
  const minute = Date.UTC(2000, 0, 1, 0, 0, 0);
  const seconds = c
    .nextRuns(61, new Date(minute - 1))
    .filter((d) => d.getTime() < minute + 60_000)
    .map((d) => d.getUTCSeconds());
  if (seconds.length <= 1) return 60;
  let gap = 60 - seconds[seconds.length - 1] + seconds[0];
  for (let i = 1; i < seconds.length; i++) gap = Math.min(gap, seconds[i] - seconds[i - 1]);
  return gap;
}

/**
 * Parse and check a schedule. Errors name the field (`/cron`, `/timeZone`): a cron that does not parse,
 * that never fires, or that fires more often than every `minIntervalSeconds` (60 in production, lowered only by
 * the test-only setting `Schedules:MinIntervalSeconds`).
 */
export function parseCron(cron: string, timeZone: string, minIntervalSeconds = 60): { schedule: CronSchedule } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  if (!isTimeZone(timeZone)) errors.push({ path: '/timeZone', message: `'${timeZone.slice(0, 64)}' is not an IANA time zone (e.g. UTC, Europe/Berlin)` });
  const six = fieldsOf(cron);
  if (typeof six === 'string') {
    errors.push({ path: '/cron', message: six });
    return { errors };
  }
  let c: Cron;
  try {
    c = croner(six, errors.length ? 'UTC' : timeZone);
  } catch (err) {
    errors.push({ path: '/cron', message: `does not parse: ${String((err as Error).message).replace(/^CronPattern: /, '')}` });
    return { errors };
  }
  const gap = secondsGap(six[0]);
  if (gap < Math.min(60, minIntervalSeconds)) {
    errors.push({
      path: '/cron',
      message: `fires more than once every ${minIntervalSeconds} seconds (the seconds field '${six[0]}' matches more than one second of a minute)`,
    });
  } else if (!c.nextRun(new Date())) {
    errors.push({ path: '/cron', message: 'never fires' });
  }
  if (errors.length) return { errors };
  const normalized = six.join(' ');
  return {
    schedule: {
      cron: normalized,
      timeZone,
      next: (after) => c.nextRun(after),
      previous: (at) => c.previousRuns(1, new Date(at.getTime() + 1))[0] ?? null,
    },
  };
}

/** `parseCron` for a schedule already validated when it was saved: throws when it no longer parses. */
export function cronSchedule(cron: string, timeZone: string): CronSchedule {
  const parsed = parseCron(cron, timeZone, 1);
  if ('errors' in parsed) throw new Error(`Schedule '${cron}' (${timeZone}): ${parsed.errors.map((e) => `${e.path} ${e.message}`).join('; ')}`);
  return parsed.schedule;
}
