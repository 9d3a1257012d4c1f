/**
 * Wall-clock time in IANA time zones, from the platform's own time zone data (Intl.DateTimeFormat): the
 * offset of a zone at an instant, the instant of a wall-clock time in a zone, and the next boundary of a
 * calendar unit. No clock is read here: every function takes the instant it works on.
 */

/** A wall-clock time: month 1-12, day 1-31, hour 0-23. */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
}

/** Formatters are costly to build: one per zone, and at most this many zones kept. */
const MAX_ZONES = 256;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(zone: string): Intl.DateTimeFormat | undefined {
  let f = formatters.get(zone);
  if (f) return f;
  try {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
  } catch {
    return undefined;
  }
  if (formatters.size >= MAX_ZONES) formatters.delete(formatters.keys().next().value as string);
  formatters.set(zone, f);
  return f;
}

/** Whether `zone` names a time zone the platform knows (`Europe/Paris`, `America/New_York`, `UTC`). */
export function isKnownZone(zone: string): boolean {
  return zone.length > 0 && zone.length <= 64 && formatterOf(zone) !== undefined;
}

/** The wall-clock time in `zone` at the instant `ms` (the zone must be known: see isKnownZone). */
export function wallTimeOf(ms: number, zone: string): WallTime {
  const d = new Date(ms + offsetAt(ms, zone));
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    millisecond: d.getUTCMilliseconds(),
  };
}

/** The wall-clock time as the platform formats it (the slow path: about 10 µs a call). */
function formattedWallTime(ms: number, zone: string): WallTime {
  const f = formatterOf(zone);
  if (!f) throw new RangeError('Unknown time zone');
  const parts: Record<string, string> = {};
  for (const p of f.formatToParts(new Date(ms))) parts[p.type] = p.value;
  const yearOfEra = Number(parts.year);
  return {
    year: parts.era === 'BC' || parts.era === 'B' ? 1 - yearOfEra : yearOfEra,
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour) % 24,
    minute: Number(parts.minute),
    second: Number(parts.second),
    millisecond: ((ms % 1000) + 1000) % 1000,
  };
}

/** Milliseconds of a wall time read as if it were UTC (years 0-99 included). */
function utcOfWall(w: WallTime): number {
  const d = new Date(Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second, w.millisecond));
  // Date.UTC reads years 0-99 as 1900-1999.
  if (w.year >= 0 && w.year < 100) d.setUTCFullYear(d.getUTCFullYear() - 1900);
  return d.getTime();
}

/**
 * Offsets by zone and quarter of an hour: zones change their offset at whole quarters of an hour (UTC), so one
 * look-up of the platform's data serves every instant of the quarter. Bounded: cleared when full.
 */
const QUARTER_MS = 900_000;
const MAX_OFFSETS = 50_000;
const offsets = new Map<string, number>();

/** The offset of `zone` from UTC at the instant `ms`, in milliseconds (Paris in winter: +3,600,000). */
export function offsetAt(ms: number, zone: string): number {
  const quarter = Math.floor(ms / QUARTER_MS) * QUARTER_MS;
  const key = `${zone}|${quarter}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    const w = formattedWallTime(quarter, zone);
    offset = utcOfWall({ ...w, millisecond: 0 }) - quarter;
    if (offsets.size >= MAX_OFFSETS) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

/**
 * The instant of a wall-clock time in `zone`. Fields may overflow (day 32, hour 24): they roll over as Date.UTC
 * does. A time that a clock change skips (02:30 when clocks go from 02:00 to 03:00) is read with the offset
 * before the change (it gives 03:30); a time that happens twice (clocks going back) is one of its two instants.
 */
export function instantOf(w: WallTime, zone: string): number {
  const asUtc = utcOfWall(w);
  const first = asUtc - offsetAt(asUtc, zone);
  const second = asUtc - offsetAt(first, zone);
  if (first === second) return first;
  // Around a change the two guesses differ: the earlier one when it shows this wall time, else (a skipped
  // time) the later one.
  const earlier = Math.min(first, second);
  return utcOfWall(wallTimeOf(earlier, zone)) === asUtc ? earlier : Math.max(first, second);
}

/** The first instant of the day (00:00) in `zone` that holds the instant `ms`. */
export function startOfDayIn(ms: number, zone: string): number {
  const w = wallTimeOf(ms, zone);
  return instantOf({ ...w, hour: 0, minute: 0, second: 0, millisecond: 0 }, zone);
}

/** The first instant of the next day in `zone` after the day that holds `ms`. */
export function nextDayIn(ms: number, zone: string): number {
  const w = wallTimeOf(ms, zone);
  return instantOf({ ...w, day: w.day + 1, hour: 0, minute: 0, second: 0, millisecond: 0 }, zone);
}

/** Calendar units a formatted date can change at, finest first. */
export type CalendarUnit = 'second' | 'minute' | 'hour' | 'day' | 'month' | 'year';

/** The first instant after `ms` at which the wall-clock `unit` in `zone` changes (the next minute, day...). */
export function nextBoundary(ms: number, unit: CalendarUnit, zone: string): number {
  switch (unit) {
    case 'second':
      return Math.floor(ms / 1000) * 1000 + 1000;
    case 'minute':
      return Math.floor(ms / 60_000) * 60_000 + 60_000;
    default: {
      const w = wallTimeOf(ms, zone);
      const zero = { minute: 0, second: 0, millisecond: 0 };
      if (unit === 'hour') {
        const next = instantOf({ ...w, ...zero, hour: w.hour + 1 }, zone);
        // A zone whose offset is not whole hours still changes hour on the wall: never before `ms`.
        return next > ms ? next : Math.floor(ms / 3_600_000) * 3_600_000 + 3_600_000;
      }
      if (unit === 'day') return nextDayIn(ms, zone);
      if (unit === 'month') return instantOf({ ...w, ...zero, hour: 0, day: 1, month: w.month + 1 }, zone);
      return instantOf({ ...w, ...zero, hour: 0, day: 1, month: 1, year: w.year + 1 }, zone);
    }
  }
}
