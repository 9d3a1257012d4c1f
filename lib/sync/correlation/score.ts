import { blockKeys, jaroWinkler, normalizeKey } from './similarity';
import type { CompiledRule } from '../rules';

/**
 * Correlation scoring (docs/correlation.md): each join rule of a connector that opted in (`config.correlation`)
 * scores the mesh objects its value matches, exactly (the join index's case-insensitive key), normalised (case,
 * accents, blanks, punctuation) or fuzzily (the Jaro-Winkler similarity of names at or above the rule's
 * `fuzzyThreshold`). A rule gives a candidate its `confidence` (100 when it has none), times the similarity for a
 * fuzzy match; the rules' points add up per candidate. {@link decideCorrelation} turns the scores into a join,
 * a case or nothing. Pure functions over the index; no I/O.
 */

export type MatchHow = 'exact' | 'normalized' | 'fuzzy';
export type CaseReason = 'noKey' | 'severalCandidates' | 'belowThreshold';

export interface RuleMatch {
  ruleId: string;
  ruleName: string;
  sourceAttribute: string;
  targetAttribute: string;
  how: MatchHow;
  /** The name similarity of a fuzzy match (1 for exact and normalised ones). */
  similarity: number;
  /** What the rule added to the candidate's score. */
  points: number;
}

export interface ScoredCandidate {
  meshObjectId: string;
  score: number;
  matched: RuleMatch[];
}

export interface CorrelationSettings {
  autoJoinConfidence: number;
  caseOnMissingKey: boolean;
}

export type CorrelationOutcome =
  { kind: 'join'; candidate: ScoredCandidate } | { kind: 'case'; reason: CaseReason; candidates: ScoredCandidate[] } | { kind: 'none' };

/** What scoring asks of the join index (lib/mesh/joinIndex.ts and lib/mesh/indexOverlay.ts give it). */
export interface ScoringIndex {
  find(by: string | undefined, key: string): string[];
  entries?(by: string): Iterable<[string, string[]]>;
  readonly generation?: number;
}

/**
 * The normalised values of one mesh attribute: normalised key -> the index's keys that normalise to it, and
 * block key -> normalised keys (the fuzzy comparisons of a value are made within its blocks).
 */
interface NameIndex {
  generation: number;
  page: object;
  normal: Map<string, string[]>;
  blocks: Map<string, string[]>;
}

const nameIndexes = new WeakMap<object, Map<string, NameIndex>>();

/**
 * The name index of attribute `by`, built from the join index's keys of that attribute. Rebuilt when the join
 * index changed since, at most once per `page` (a page's planning changes the index with every object it plans;
 * values an earlier object of the same page wrote are found exactly, but normalised and fuzzy matching sees
 * them from the next page on).
 */
function nameIndex(index: ScoringIndex, by: string, page: object): NameIndex | null {
  if (!index.entries) return null;
  let perIndex = nameIndexes.get(index);
  if (!perIndex) nameIndexes.set(index, (perIndex = new Map()));
  const gen = index.generation ?? 0;
  const cached = perIndex.get(by);
  if (cached && (cached.generation === gen || cached.page === page)) return cached;
  const normal = new Map<string, string[]>();
  const blocks = new Map<string, string[]>();
  for (const [key, ids] of index.entries(by)) {
    if (!ids.length) continue;
    const n = normalizeKey(key);
    if (!n) continue;
    const list = normal.get(n);
    if (list) {
      list.push(key);
      continue;
    }
    normal.set(n, [key]);
    for (const b of blockKeys(n)) {
      const bl = blocks.get(b);
      if (bl) bl.push(n);
      else blocks.set(b, [n]);
    }
  }
  const built = { generation: gen, page, normal, blocks };
  perIndex.set(by, built);
  return built;
}

/** The similarity of two normalised names, whatever their word order. */
function similarityOf(a: string, b: string): number {
  const direct = jaroWinkler(a, b);
  if (direct === 1 || (!a.includes(' ') && !b.includes(' '))) return direct;
  const sa = a.split(' ').sort().join(' ');
  const sb = b.split(' ').sort().join(' ');
  return Math.max(direct, jaroWinkler(sa, sb));
}

/**
 * Score the mesh objects `object`'s join rules match. `keysOf` gives a rule's keys for the object (the join
 * keys the planner computes: the source value through the rule's script, lower-cased). `noKey`: no exact join
 * rule (or, when every rule is normalised or fuzzy, no rule at all) gave a value.
 */
export function scoreCandidates(
  joins: readonly CompiledRule[],
  index: ScoringIndex,
  keysOf: (jr: CompiledRule) => string[],
  page: object,
  sure?: { at: number; eligible: (id: string) => boolean },
): { candidates: ScoredCandidate[]; noKey: boolean; early?: true } {
  const byId = new Map<string, ScoredCandidate>();
  const hasExact = joins.some((jr) => (jr.rule.match ?? 'exact') === 'exact');
  let keyed = false;
  // Exact rules first (cheap lookups): with `sure`, scoring stops once one eligible candidate has reached `at`
  // and no other could reach it with the points of the rules left (the decision is that join whatever they add).
  const ordered = [...joins].sort((a, b) => Number((a.rule.match ?? 'exact') !== 'exact') - Number((b.rule.match ?? 'exact') !== 'exact'));
  let remaining = ordered.reduce((sum, jr) => sum + weightOf(jr), 0);
  for (const jr of ordered) {
    remaining -= weightOf(jr);
    const by = jr.rule.targetAttribute ?? undefined;
    const how = jr.rule.match ?? 'exact';
    const keys = keysOf(jr);
    if (!keys.length) continue;
    if (how === 'exact' || !hasExact) keyed = true;
    const hits = new Map<string, { how: MatchHow; similarity: number }>();
    const hit = (id: string, h: MatchHow, similarity: number) => {
      const prev = hits.get(id);
      if (!prev || prev.similarity < similarity) hits.set(id, { how: h, similarity });
    };
    for (const key of keys) for (const id of index.find(by, key)) hit(id, 'exact', 1);
    if (how !== 'exact' && by) {
      const names = nameIndex(index, by, page);
      if (names) {
        const threshold = jr.rule.fuzzyThreshold ?? 0.9;
        for (const key of keys) {
          const n = normalizeKey(key);
          if (!n) continue;
          for (const k of names.normal.get(n) ?? []) for (const id of index.find(by, k)) if (!hits.has(id)) hit(id, 'normalized', 1);
          if (how !== 'fuzzy') continue;
          const seen = new Set<string>([n]);
          for (const b of blockKeys(n)) {
            for (const other of names.blocks.get(b) ?? []) {
              if (seen.has(other)) continue;
              seen.add(other);
              const sim = similarityOf(n, other);
              if (sim < threshold) continue;
              for (const k of names.normal.get(other)!) for (const id of index.find(by, k)) hit(id, 'fuzzy', sim);
            }
          }
        }
      }
    }
    const weight = weightOf(jr);
    for (const [id, h] of hits) {
      const points = h.how === 'fuzzy' ? Math.round(weight * h.similarity) : weight;
      let c = byId.get(id);
      if (!c) byId.set(id, (c = { meshObjectId: id, score: 0, matched: [] }));
      c.score += points;
      c.matched.push({
        ruleId: jr.rule.ruleId,
        ruleName: jr.rule.ruleName,
        sourceAttribute: jr.rule.sourceAttribute ?? '',
        targetAttribute: jr.rule.targetAttribute ?? '',
        how: h.how,
        similarity: Math.round(h.similarity * 1000) / 1000,
        points,
      });
    }
    if (sure && settled(byId, sure, remaining)) return { candidates: sorted(byId), noKey: !keyed, early: true };
  }
  return { candidates: sorted(byId), noKey: !keyed };
}

const weightOf = (jr: CompiledRule) => jr.rule.confidence ?? 100;
const sorted = (byId: Map<string, ScoredCandidate>) => [...byId.values()].sort((a, b) => b.score - a.score || (a.meshObjectId < b.meshObjectId ? -1 : 1));

/** One eligible candidate at `at` or above, and no other able to reach it with `remaining` points. */
function settled(byId: Map<string, ScoredCandidate>, sure: { at: number; eligible: (id: string) => boolean }, remaining: number): boolean {
  let reached = 0;
  let next = 0;
  for (const c of byId.values()) {
    if (!sure.eligible(c.meshObjectId)) continue;
    if (c.score >= sure.at) reached++;
    else if (c.score > next) next = c.score;
  }
  return reached === 1 && next + remaining < sure.at;
}

/**
 * The decision on scored (and eligible) candidates: the one candidate at or above `autoJoinConfidence` joins;
 * several there, or any candidate below it, is a case (`severalCandidates` when more than one, else `noKey`
 * when the object has no key, else `belowThreshold`); no candidate is a case only without a key and with
 * `caseOnMissingKey`, else nothing (the object is projected or stays a disconnector, as without correlation).
 */
export function decideCorrelation(candidates: readonly ScoredCandidate[], settings: CorrelationSettings, noKey: boolean): CorrelationOutcome {
  const sure = candidates.filter((c) => c.score >= settings.autoJoinConfidence);
  if (sure.length === 1) return { kind: 'join', candidate: sure[0] };
  if (candidates.length > 1) return { kind: 'case', reason: 'severalCandidates', candidates: [...candidates] };
  if (candidates.length === 1) return { kind: 'case', reason: noKey ? 'noKey' : 'belowThreshold', candidates: [...candidates] };
  if (noKey && settings.caseOnMissingKey) return { kind: 'case', reason: 'noKey', candidates: [] };
  return { kind: 'none' };
}
