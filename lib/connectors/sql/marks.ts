import { ConnectorError } from '../sdk';
import type { SqlDialect } from './params';

/** A delta watermark value: the largest deltaColumn value read, typed so it can be bound again. */
export interface MarkValue {
  /** `num`: integer or decimal (kept as text, exact); `ts`: ISO timestamp; `str`: anything else. */
  t: 'num' | 'ts' | 'str';
  v: string;
}

/** A full import's resume point (base64url JSON): the last anchor of a committed page and the run's state. */
export interface FullCursor {
  v: 1;
  cfg: string;
  /** The anchor-hash snapshot being built, and its byte length after the committed page. */
  snap: string;
  sb: number;
  /** Keyset position: the last anchor read (text form). */
  after: string;
  /** The watermark captured before the first page. */
  wm: MarkValue | null;
}

/** What a watermark names: the deltaColumn mark, the snapshot of anchors and hashes, the delta count. */
export interface Watermark {
  v: 1;
  cfg: string;
  snap: string;
  wm: MarkValue | null;
  /** Deltas run since the last anchor-set diff (for deleteDetection anchorDiff). */
  n: number;
}

/** A cursor or watermark as opaque text (base64url JSON), and back: text this connector did not write is `cursor_invalid`. */
export const encode = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
export function decode<T>(token: string, what: string): T {
  try {
    const o = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as T & { v?: number };
    if (o && o.v === 1) return o;
  } catch {
    // fall through
  }
  throw new ConnectorError('cursor_invalid', `The ${what} is not one this SQL connector wrote.`);
}

export function markOf(v: unknown): MarkValue | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : { t: 'ts', v: v.toISOString() };
  if (typeof v === 'number' || typeof v === 'bigint') return { t: 'num', v: String(v) };
  const s = String(v);
  return /^-?\d+(\.\d+)?$/.test(s) ? { t: 'num', v: s } : { t: 'str', v: s };
}

function compareNum(a: string, b: string): number {
  if (/^-?\d+$/.test(a) && /^-?\d+$/.test(b)) {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return Number(a) - Number(b);
}

/** The larger of two marks (a mark of another type than the current one replaces nothing). */
export function maxMark(a: MarkValue | null, b: MarkValue | null): MarkValue | null {
  if (!a) return b;
  if (!b || a.t !== b.t) return a;
  if (a.t === 'num') return compareNum(b.v, a.v) > 0 ? b : a;
  if (a.t === 'ts') return Date.parse(b.v) > Date.parse(a.v) ? b : a;
  return b.v > a.v ? b : a;
}

/** The value bound to `:watermark`: a timestamp goes back by the overlap window. */
export function markParam(m: MarkValue, overlapSeconds: number, dialect: SqlDialect): unknown {
  if (m.t === 'ts') return new Date(Date.parse(m.v) - overlapSeconds * 1000);
  if (m.t === 'num') {
    // MySQL compares a text parameter with an integer column as a double: bind a number when it is exact.
    const n = Number(m.v);
    return dialect !== 'postgres' && Number.isSafeInteger(n) ? n : m.v;
  }
  return m.v;
}
