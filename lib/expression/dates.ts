import { instantOf, wallTimeOf, type CalendarUnit } from './zones';

/**
 * Date parsing and formatting for the date helpers: UTC unless a time zone is named, no locale, no clock, so the
 * same input always gives the same output on every engine instance.
 */

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/i;
/** LDAP GeneralizedTime (RFC 4517): `20240131123000Z`, `20240131123000.5+0100`. The zone is required. */
const GENERALIZED = /^(\d{4})(\d{2})(\d{2})(\d{2})(?:(\d{2})(\d{2})?)?(?:[.,](\d{1,9}))?(Z|[+-]\d{2}(?:\d{2})?)$/i;

function offsetMinutes(zone: string | undefined): number {
  if (!zone || zone.toUpperCase() === 'Z') return 0;
  const sign = zone[0] === '-' ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0'));
}

function fromParts(m: RegExpExecArray, zone: string | undefined): number | undefined {
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0));
  const fraction = m[7] ? Number(`0.${m[7]}`) : 0;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return undefined;
  const check = new Date(Date.UTC(2000, month - 1, day, hour, minute, Math.min(second, 59), Math.floor(fraction * 1000)));
  // Years 0-99 would be read as 1900-1999 by Date.UTC.
  check.setUTCFullYear(year);
  const ms = check.getTime();
  // Date.UTC rolls 2024-02-30 over to March: a date that does not round-trip does not exist.
  if (check.getUTCDate() !== day || check.getUTCMonth() !== month - 1) return undefined;
  return ms - offsetMinutes(zone) * 60_000;
}

/** Milliseconds since the epoch for a Date, a number of milliseconds, an ISO 8601 or an LDAP GeneralizedTime string. */
export function toEpochMs(value: unknown): number | undefined {
  if (value instanceof Date) return Number.isFinite(value.getTime()) ? value.getTime() : undefined;
  if (typeof value === 'number') return Number.isFinite(value) && Math.abs(value) <= 8.64e15 ? value : undefined;
  if (typeof value !== 'string' || value.length > 40) return undefined;
  const text = value.trim();
  const iso = ISO.exec(text);
  if (iso) return fromParts(iso, iso[8]);
  const generalized = GENERALIZED.exec(text);
  if (generalized) return fromParts(generalized, generalized[8]);
  return undefined;
}

const two = (n: number): string => String(n).padStart(2, '0');

/** Replaces the tokens yyyy MM dd HH mm ss (UTC); every other character is kept as written. */
export function formatUtc(ms: number, pattern: string): string {
  const d = new Date(ms);
  return pattern.replace(/yyyy|MM|dd|HH|mm|ss/g, (token) => {
    switch (token) {
      case 'yyyy':
        return String(d.getUTCFullYear()).padStart(4, '0');
      case 'MM':
        return two(d.getUTCMonth() + 1);
      case 'dd':
        return two(d.getUTCDate());
      case 'HH':
        return two(d.getUTCHours());
      case 'mm':
        return two(d.getUTCMinutes());
      default:
        return two(d.getUTCSeconds());
    }
  });
}

/**
 * As toEpochMs, but an ISO 8601 text without a zone (`2026-12-09`, `2026-12-09T06:00`) is a wall-clock time in
 * `zone` (a known IANA zone) instead of UTC. A text with a zone (`Z`, `+01:00`) and a GeneralizedTime keep theirs.
 */
export function toEpochMsIn(value: unknown, zone: string): number | undefined {
  if (typeof value === 'string' && value.length <= 40) {
    const iso = ISO.exec(value.trim());
    if (iso && !iso[8]) {
      const asUtc = fromParts(iso, undefined);
      if (asUtc === undefined) return undefined;
      const d = new Date(asUtc);
      const wall = {
        year: d.getUTCFullYear(),
        month: d.getUTCMonth() + 1,
        day: d.getUTCDate(),
        hour: d.getUTCHours(),
        minute: d.getUTCMinutes(),
        second: d.getUTCSeconds(),
        millisecond: d.getUTCMilliseconds(),
      };
      return instantOf(wall, zone);
    }
  }
  return toEpochMs(value);
}

/** A pattern's finest token: the calendar unit at whose boundaries its text changes (none: it never does). */
export function finestUnit(pattern: string): CalendarUnit | undefined {
  const units: [RegExp, CalendarUnit][] = [
    [/ss/, 'second'],
    [/mm/, 'minute'],
    [/HH/, 'hour'],
    [/dd/, 'day'],
    [/MM/, 'month'],
    [/yyyy/, 'year'],
  ];
  return units.find(([re]) => re.test(pattern))?.[1];
}

/** Replaces the tokens yyyy MM dd HH mm ss with the wall-clock time in `zone`; every other character is kept. */
export function formatIn(ms: number, pattern: string, zone: string): string {
  if (zone === 'UTC') return formatUtc(ms, pattern);
  const w = wallTimeOf(ms, zone);
  const tokens: Record<string, string> = {
    yyyy: String(w.year).padStart(4, '0'),
    MM: two(w.month),
    dd: two(w.day),
    HH: two(w.hour),
    mm: two(w.minute),
    ss: two(w.second),
  };
  return pattern.replace(/yyyy|MM|dd|HH|mm|ss/g, (token) => tokens[token]);
}
