import { shownValue } from '../core/secretAttributes';
import type { AttributeValue } from '../core/values';
import type { MeshReadModel } from './readModel';
import { distinctRelationships } from './model';
import { NO_SOURCE, type AttributeColumn, type MatchMode, type MeshRecord, type SortedIndex } from './readModelIndexes';

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

/** A test of the object at a slot. */
type Test = (slot: number) => boolean;

/** A criterion compiled: its test, and for a value criterion every slot it matches (each once, any index). */
export interface Compiled {
  test: Test;
  found?: number[];
}

/**
 * The fewest matches a criterion may list for the query to go from its matches (ordered by the index's ranks)
 * instead of a pass over the whole index: an eighth of the index.
 */
const CANDIDATES_AT_MOST = 1 / 8;

/** Run a query: every candidate is tested (the count is exact), items are collected from `skip` on. */
export function queryMesh(model: MeshReadModel, q: MeshQuery): MeshPage {
  const index: SortedIndex | undefined = q.objectType === undefined ? model.all : model.ofType(q.objectType);
  if (!index) return { items: [], totalCount: 0 };
  const end = q.skip + q.take;
  const compiled = (q.criteria ?? [])
    .slice()
    .sort((a, b) => COST[a.operator] - COST[b.operator])
    .map((c, i) => compileCriterion(model, c, i));
  const tests = compiled.map((c) => c.test);
  const all = index.all;
  const items: MeshRecord[] = [];
  let count = 0;
  const n = tests.length;
  if (q.search !== undefined && q.search !== '') {
    const positions = index.searchPositions(q.search.toLowerCase());
    outer: for (const i of positions) {
      const r = all[i];
      for (let t = 0; t < n; t++) if (!tests[t](r.slot)) continue outer;
      if (count >= q.skip && count < end) items.push(r);
      count++;
    }
    return { items, totalCount: count };
  }
  if (!n) {
    for (let i = q.skip; i < end && i < all.length; i++) items.push(all[i]);
    return { items, totalCount: all.length };
  }
  // A value criterion that matched few objects: test only those, and order the ones that pass by rank.
  let fewest: Compiled | undefined;
  for (const c of compiled) if (c.found && (!fewest || c.found.length < fewest.found!.length)) fewest = c;
  if (fewest && fewest.found!.length <= all.length * CANDIDATES_AT_MOST) return fromCandidates(index, fewest.found!, tests, q.skip, q.take);
  const slots = index.slots();
  outer: for (let i = 0; i < slots.length; i++) {
    const slot = slots[i];
    for (let t = 0; t < n; t++) if (!tests[t](slot)) continue outer;
    if (count >= q.skip && count < end) items.push(all[i]);
    count++;
  }
  return { items, totalCount: count };
}

/**
 * The query's page from the slots one criterion matched (`candidates`, any order, each once): those in the
 * index that pass every test are counted, and the `skip + take` first in index order kept (a bounded max-heap
 * of ranks). O(k log(skip + take)) for k candidates instead of a pass over the index.
 */
function fromCandidates(index: SortedIndex, candidates: readonly number[], tests: Test[], skip: number, take: number): MeshPage {
  const ranks = index.ranks();
  const all = index.all;
  const keep = skip + take;
  const heap = new Int32Array(Math.max(1, Math.min(keep, candidates.length)));
  let size = 0;
  let count = 0;
  const n = tests.length;
  outer: for (let c = 0; c < candidates.length; c++) {
    const slot = candidates[c];
    const rank = slot < ranks.length ? ranks[slot] : -1;
    if (rank < 0) continue;
    for (let t = 0; t < n; t++) if (!tests[t](slot)) continue outer;
    count++;
    if (keep === 0) continue;
    if (size < keep) {
      // Sift up.
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (heap[parent] >= rank) break;
        heap[i] = heap[parent];
        i = parent;
      }
      heap[i] = rank;
    } else if (rank < heap[0]) {
      // Replace the largest kept rank, sift down.
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= size) break;
        const r = l + 1;
        const big = r < size && heap[r] > heap[l] ? r : l;
        if (heap[big] <= rank) break;
        heap[i] = heap[big];
        i = big;
      }
      heap[i] = rank;
    }
  }
  const kept = heap.subarray(0, size).sort();
  const items: MeshRecord[] = [];
  for (let i = skip; i < kept.length; i++) items.push(all[kept[i]]);
  return { items, totalCount: count };
}

/** Cheaper tests first (AND: the first failing test ends an object's evaluation); all are one byte read per object. */
const COST: Record<Operator, number> = { ispresent: 0, isnotpresent: 0, equals: 1, startswith: 1, endswith: 1, contains: 1, istrue: 1, isfalse: 1 };

/** A criterion compiled to a test of one object (by slot); `scratch` picks the model's scratch bitmap it may use. */
export function compileCriterion(model: MeshReadModel, c: Criterion, scratch = 0): Compiled {
  const columns = model.nameIds(c.attributeName).map((n) => model.columns[n]);
  switch (c.operator) {
    case 'ispresent':
      return { test: presence(columns) };
    case 'isnotpresent': {
      const present = presence(columns);
      return { test: (slot) => !present(slot) };
    }
    case 'istrue':
      return matches(
        model.scratch(scratch),
        columns,
        [...TRUE].map((v): [MatchMode, string] => ['equals', v]),
      );
    case 'isfalse':
      return matches(
        model.scratch(scratch),
        columns,
        [...FALSE].map((v): [MatchMode, string] => ['equals', v]),
      );
    default: {
      if (c.value === undefined) throw new Error(`The operator '${c.operator}' needs a value.`);
      return matches(model.scratch(scratch), columns, [[c.operator as MatchMode, c.value.toLowerCase()]]);
    }
  }
}

function presence(columns: AttributeColumn[]): Test {
  if (columns.length === 1) {
    const present = columns[0].present;
    return (slot) => present[slot] === 1;
  }
  return (slot) => columns.some((col) => col.present[slot] === 1);
}

/**
 * The slots where any value of the attribute matches one of `patterns` (a multi-valued attribute: any of its
 * values), marked once per request in a scratch bitmap and listed; the test is then one byte read per object.
 */
function matches(hits: Uint8Array, columns: AttributeColumn[], patterns: [MatchMode, string][]): Compiled {
  const found: number[] = [];
  for (const col of columns) for (const [mode, want] of patterns) col.match(mode, want, hits, found);
  return { test: (slot) => hits[slot] === 1, found };
}

/**
 * List item (spec 2.5): identity fields and `attributeValues`, attribute name -> consolidated value (a secret attribute's
 * value as `********`, lib/core/secretAttributes.ts).
 */
export function toListItem(model: MeshReadModel, r: MeshRecord) {
  const attributeValues: Record<string, AttributeValue> = {};
  for (const n of r.names) {
    const name = model.names.values[n];
    attributeValues[name] = shownValue(name, model.columns[n].values[r.slot] as AttributeValue);
  }
  // The read model holds live objects only (deleted ones are tombstones, lib/mesh/tombstones.ts).
  return {
    meshObjectId: r.id,
    objectType: r.objectType,
    anchorValue: r.anchorValue,
    createdOn: r.createdOn,
    updatedOn: r.updatedOn,
    state: 'active' as const,
    attributeValues,
  };
}

/**
 * Detail (spec 2.5): identity fields, `attributes` (one entry per value, as a string: a multi-valued
 * attribute gives one entry per value; numbers and booleans in their JSON form; no entry for no value; a secret
 * attribute one entry `********`) and `relationships` (the target's current anchor and type).
 */
export function toDetail(model: MeshReadModel, r: MeshRecord) {
  const attributes: { attributeName: string; attributeValue: string; source: string | null; confidence: number; updatedOn: string }[] = [];
  for (const n of r.names) {
    const col = model.columns[n];
    const meta = col.meta;
    const k = r.slot * 3;
    const attributeName = model.names.values[n];
    const source = meta[k] === NO_SOURCE ? null : model.sources.values[meta[k]];
    const updatedOn = model.stamps.values[meta[k + 2]];
    const v = shownValue(attributeName, col.values[r.slot] as AttributeValue);
    for (const x of Array.isArray(v) ? v : [v]) {
      if (x === null || x === undefined || x === '') continue;
      attributes.push({ attributeName, attributeValue: String(x), source, confidence: meta[k + 1], updatedOn });
    }
  }
  const relationships = distinctRelationships(r.relationships).map((rel) => {
    const t = model.target(rel);
    return { relationshipType: rel.type, targetMeshObjectId: rel.targetId, targetAnchorValue: t.targetAnchor, targetObjectType: t.targetType };
  });
  return {
    meshObjectId: r.id,
    objectType: r.objectType,
    anchorValue: r.anchorValue,
    createdOn: r.createdOn,
    updatedOn: r.updatedOn,
    state: 'active' as const,
    attributes,
    relationships,
  };
}
