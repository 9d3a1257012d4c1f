import type { AttributeValue } from '../connectors/sdk';
import { META, NO_SOURCE, type MeshReadModel, type MeshRecord, type SortedIndex } from './readModel';

/**
 * Mesh queries over the read model (lib/mesh/readModel.ts): the list (`GET /mesh/objects`) and the advanced
 * search (`POST /mesh/objects/search`) are one query: an optional object type, an optional anchor substring
 * and criteria combined with AND, ordered by anchor (case-insensitive) then id, paged by skip/take with an
 * exact total count.
 *
 * Semantics (the contract's "Mesh queries", plus what it leaves open, see docs/mesh-queries.md):
 * - case folding is `toLowerCase()` on both sides (no locale, no Unicode normalization);
 * - attribute names in criteria match case-insensitively; object types too;
 * - `equals`, `contains`, `startswith`, `endswith` compare the value's string form (numbers and booleans as
 *   JSON writes them); a multi-valued attribute matches when any of its values matches;
 * - `ispresent`: the attribute has a non-empty value (null, '' and an empty list are no value);
 *   `isnotpresent` is its negation;
 * - `istrue`: any value is `true`, `1` or `yes` (case-insensitive; booleans and the number 1 too);
 *   `isfalse`: any value is `false`, `0` or `no`. Anything else is neither.
 */
export const OPERATORS = ['equals', 'contains', 'startswith', 'endswith', 'ispresent', 'isnotpresent', 'istrue', 'isfalse'] as const;
export type Operator = (typeof OPERATORS)[number];
/** Operators that compare with `value` (a criterion without one is a 400). */
export const VALUE_OPERATORS: readonly Operator[] = ['equals', 'contains', 'startswith', 'endswith'];

export interface Criterion {
  attributeName: string;
  operator: Operator;
  value?: string;
}

export interface MeshQuery {
  objectType?: string;
  /** Case-insensitive substring of the anchor value. */
  search?: string;
  criteria?: readonly Criterion[];
  skip: number;
  take: number;
}

export interface MeshPage {
  items: MeshRecord[];
  totalCount: number;
}

const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no']);

type Test = (r: MeshRecord) => boolean;

/** Run a query: every candidate is tested (the count is exact), items are collected from `skip` on. */
export function queryMesh(model: MeshReadModel, q: MeshQuery): MeshPage {
  const index: SortedIndex | undefined = q.objectType === undefined ? model.all : model.ofType(q.objectType);
  if (!index) return { items: [], totalCount: 0 };
  const end = q.skip + q.take;
  const tests = (q.criteria ?? [])
    .slice()
    .sort((a, b) => COST[a.operator] - COST[b.operator])
    .map((c) => compileCriterion(model, c));
  const all = index.all;
  const items: MeshRecord[] = [];
  let count = 0;
  const n = tests.length;
  if (q.search !== undefined && q.search !== '') {
    const positions = index.searchPositions(q.search.toLowerCase());
    outer: for (const i of positions) {
      const r = all[i];
      for (let t = 0; t < n; t++) if (!tests[t](r)) continue outer;
      if (count >= q.skip && count < end) items.push(r);
      count++;
    }
    return { items, totalCount: count };
  }
  if (!n) {
    for (let i = q.skip; i < end && i < all.length; i++) items.push(all[i]);
    return { items, totalCount: all.length };
  }
  outer: for (let i = 0; i < all.length; i++) {
    const r = all[i];
    for (let t = 0; t < n; t++) if (!tests[t](r)) continue outer;
    if (count >= q.skip && count < end) items.push(r);
    count++;
  }
  return { items, totalCount: count };
}

/** Cheaper tests run first (AND: the first failing test ends a record's evaluation). */
const COST: Record<Operator, number> = { ispresent: 0, isnotpresent: 0, equals: 1, startswith: 2, endswith: 2, istrue: 3, isfalse: 3, contains: 4 };

/** A criterion as a test of one record. */
export function compileCriterion(model: MeshReadModel, c: Criterion): Test {
  const ids = model.nameIds(c.attributeName);
  switch (c.operator) {
    case 'ispresent':
      return (r) => anyValue(r, ids, always);
    case 'isnotpresent':
      return (r) => !anyValue(r, ids, always);
    case 'istrue':
      return (r) => anyValue(r, ids, isTrue);
    case 'isfalse':
      return (r) => anyValue(r, ids, isFalse);
    default: {
      if (c.value === undefined) throw new Error(`The operator '${c.operator}' needs a value.`);
      const cmp = comparer(c.operator, c.value.toLowerCase());
      return (r) => anyValue(r, ids, cmp);
    }
  }
}

const always = () => true;
const isTrue = (s: string) => TRUE.has(s);
const isFalse = (s: string) => FALSE.has(s);

function comparer(op: Operator, want: string): (s: string) => boolean {
  switch (op) {
    case 'equals':
      return (s) => s === want;
    case 'contains':
      return (s) => s.includes(want);
    case 'startswith':
      return (s) => s.startsWith(want);
    case 'endswith':
      return (s) => s.endsWith(want);
    default:
      throw new Error(`'${op}' does not compare values.`);
  }
}

/** True when some value (folded, non-empty) of an attribute named by `ids` passes `test`. */
function anyValue(r: MeshRecord, ids: readonly number[], test: (folded: string) => boolean): boolean {
  if (!ids.length) return false;
  const meta = r.meta;
  const folded = r.folded;
  for (let i = 0, k = 0; k < meta.length; i++, k += META) {
    const name = meta[k];
    if (ids.length === 1 ? name !== ids[0] : !ids.includes(name)) continue;
    const v = folded[i];
    if (v === null) continue;
    if (typeof v === 'string') {
      if (test(v)) return true;
    } else {
      for (let j = 0; j < v.length; j++) if (test(v[j])) return true;
    }
  }
  return false;
}

/** List item (spec 2.5): identity fields and `attributeValues`, attribute name -> consolidated value. */
export function toListItem(model: MeshReadModel, r: MeshRecord) {
  const attributeValues: Record<string, AttributeValue> = {};
  for (let i = 0; i < r.values.length; i++) attributeValues[model.names.values[r.meta[i * META]]] = r.values[i];
  return { meshObjectId: r.id, objectType: r.objectType, anchorValue: r.anchorValue, createdOn: r.createdOn, updatedOn: r.updatedOn, attributeValues };
}

/**
 * Detail (spec 2.5): identity fields, `attributes` (one entry per value, as a string: a multi-valued
 * attribute gives one entry per value; numbers and booleans in their JSON form) and `relationships` (the
 * target's current anchor and type).
 */
export function toDetail(model: MeshReadModel, r: MeshRecord) {
  const attributes: { attributeName: string; attributeValue: string; source: string | null; confidence: number; updatedOn: string }[] = [];
  for (let i = 0; i < r.values.length; i++) {
    const k = i * META;
    const base = {
      attributeName: model.names.values[r.meta[k]],
      source: r.meta[k + 1] === NO_SOURCE ? null : model.sources.values[r.meta[k + 1]],
      confidence: r.meta[k + 2],
      updatedOn: model.stamps.values[r.meta[k + 3]],
    };
    const v = r.values[i];
    for (const x of Array.isArray(v) ? v : [v]) {
      if (x === null || x === '') continue;
      attributes.push({ attributeName: base.attributeName, attributeValue: String(x), source: base.source, confidence: base.confidence, updatedOn: base.updatedOn });
    }
  }
  const relationships = r.relationships.map((rel) => {
    const t = model.target(rel);
    return { relationshipType: rel.type, targetMeshObjectId: rel.targetId, targetAnchorValue: t.targetAnchor, targetObjectType: t.targetType };
  });
  return { meshObjectId: r.id, objectType: r.objectType, anchorValue: r.anchorValue, createdOn: r.createdOn, updatedOn: r.updatedOn, attributes, relationships };
}
