import { toEpochMs } from './dates';

/**
 * Date values of the expression language, and the engine's clock as an evaluation sees it.
 *
 * A date value is an instant (milliseconds since 1970, UTC). One made from `now()` remembers that it is
 * `now + fromNow` (`addDays(now(), 3)` is now plus three days), so that comparing it with a fixed instant tells
 * when the comparison's result changes: `now() >= date(object.hireDate)` is false until the hire date and true
 * from it on. The evaluation records the earliest such instant after now in its clock (`due`): the engine
 * evaluates the object again then (docs/dated-changes.md).
 */

/** The engine's clock for one evaluation: `now` (read by `now()`) and the earliest instant after it the result depends on. */
export interface EvaluationClock {
  readonly now: number;
  /** Set by the evaluation: the first instant after `now` at which the result can change (undefined: none). */
  due?: number;
}

/**
 * The scope key of the clock. A symbol, so no script can name it: `now()` reads it, and a scope without one has
 * no clock (`now()` is then an error).
 */
export const CLOCK: unique symbol = Symbol('clock');

/** An instant; `fromNow` when it is `now()` moved by that many milliseconds (the clock's now plus fromNow). */
export class DateValue {
  constructor(
    readonly ms: number,
    readonly fromNow?: number,
  ) {
    Object.freeze(this);
  }

  /** ISO 8601 in UTC with milliseconds (`2026-12-09T05:00:00.000Z`): how a date is written to an attribute. */
  toJSON(): string {
    return new Date(this.ms).toISOString();
  }
}

/** The largest instant a Date can hold (year 275760). */
const MAX_MS = 8.64e15;

/** A date value for `ms`, or undefined when it is out of range. */
export function dateOf(ms: number, fromNow?: number): DateValue | undefined {
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_MS ? new DateValue(ms, fromNow) : undefined;
}

/** The instant of a date value, or of a value read as a date (a number of ms, an ISO 8601 or GeneralizedTime text). */
export function instantOfValue(value: unknown): number | undefined {
  if (value instanceof DateValue) return value.ms;
  return toEpochMs(value);
}

/** Records `at` as an instant the result depends on when it is after the clock's now (the earliest one wins). */
export function noteDue(clock: EvaluationClock | undefined, at: number): void {
  if (!clock || !(at > clock.now) || !Number.isFinite(at)) return;
  if (clock.due === undefined || at < clock.due) clock.due = at;
}

type Comparison = '<' | '<=' | '>' | '>=' | '==' | '!=' | '===' | '!==';

/**
 * Compares two values of which at least one is a date value, as instants (the other read as a date; one that
 * is not a date makes every comparison false, and `!=` true). When exactly one side moves with now, the instant
 * at which the result changes is recorded in the clock.
 */
export function compareDates(operator: Comparison, left: unknown, right: unknown, clock: EvaluationClock | undefined): boolean {
  const a = instantOfValue(left);
  const b = instantOfValue(right);
  if (a === undefined || b === undefined) return operator === '!=' || operator === '!==';
  const la = left instanceof DateValue ? left.fromNow : undefined;
  const lb = right instanceof DateValue ? right.fromNow : undefined;
  if (clock && (la === undefined) !== (lb === undefined)) noteFlip(operator, la !== undefined ? b - la : a - (lb as number), la !== undefined, clock);
  switch (operator) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '==':
    case '===':
      return a === b;
    default:
      return a !== b;
  }
}

/**
 * `t` is the value of now at which the moving side equals the fixed one. As now grows, `now+k < T` turns false
 * (and `>=` true) at t; `now+k <= T` turns false (and `>` true) one millisecond later; mirrored when the moving
 * side is on the right. An equality holds for one millisecond: it changes at t and at t + 1.
 */
function noteFlip(operator: Comparison, t: number, movingOnLeft: boolean, clock: EvaluationClock): void {
  switch (operator) {
    case '<':
    case '>=':
      noteDue(clock, movingOnLeft ? t : t + 1);
      return;
    case '<=':
    case '>':
      noteDue(clock, movingOnLeft ? t + 1 : t);
      return;
    default:
      noteDue(clock, t);
      noteDue(clock, t + 1);
  }
}

/** A script's result as attribute values have it: a date value becomes its ISO 8601 text (in arrays too). */
export function plainResult(value: unknown): unknown {
  if (value instanceof DateValue) return value.toJSON();
  if (Array.isArray(value) && value.some((v) => v instanceof DateValue)) return value.map((v: unknown) => (v instanceof DateValue ? v.toJSON() : v));
  return value;
}
