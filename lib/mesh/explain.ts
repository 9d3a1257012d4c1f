import { COMPOSER, winner, type Contribution } from './model';

/**
 * Why a mesh attribute has its value: each contribution classified against the winner. Pure: the caller
 * says which rules are enabled now (lib/api/explain.ts reads them).
 *
 * A contribution whose rule is disabled (or deleted) since it was made is `ruleDisabled` and takes no part in
 * precedence: the winner is chosen among the others, as the next run that processes the object will choose it.
 * Among the others: the winner is `won`; one with lower confidence is `lowerConfidence`; at equal confidence a
 * higher priority number is `lowerPriority`; at equal priority, an earlier value is `older`.
 */
export type CandidateOutcome = 'won' | 'lowerConfidence' | 'lowerPriority' | 'older' | 'ruleDisabled';

export interface Classified {
  contribution: Contribution;
  outcome: CandidateOutcome;
}

export function classifyContributions(
  list: readonly Contribution[],
  isEnabled: (ruleId: string) => boolean,
): { winner: Classified | null; candidates: Classified[] } {
  const live = list.filter((c) => isEnabled(c.r));
  const w = winner(live);
  const candidates = list.map((c): Classified => ({ contribution: c, outcome: outcomeOf(c, w, isEnabled(c.r)) }));
  const won = candidates.find((c) => c.contribution === w) ?? null;
  // The winner first, then the others in precedence order.
  const rank = (c: Classified) => (c.outcome === 'won' ? 0 : c.outcome === 'ruleDisabled' ? 2 : 1);
  candidates.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      b.contribution.conf - a.contribution.conf ||
      a.contribution.pri - b.contribution.pri ||
      (a.contribution.at < b.contribution.at ? 1 : a.contribution.at > b.contribution.at ? -1 : 0),
  );
  return { winner: won, candidates };
}

function outcomeOf(c: Contribution, w: Contribution | undefined, enabled: boolean): CandidateOutcome {
  if (!enabled) return 'ruleDisabled';
  if (c === w || !w) return 'won';
  if (c.conf < w.conf) return 'lowerConfidence';
  if (c.pri > w.pri) return 'lowerPriority';
  return 'older';
}

/** The contribution of a mesh-composer rule to the attribute, if any. */
export const composerContribution = (list: readonly Contribution[]): Contribution | undefined => list.find((c) => c.c === COMPOSER);

/**
 * The attribute names an expression reads from its input (`source.x`, `object.x`, `source['x']`), in order
 * of first use.
 */
export function scriptInputs(script: string | null): string[] {
  if (!script) return [];
  const out: string[] = [];
  const re = /\b(?:source|object)\s*(?:\.\s*([A-Za-z_$][\w$]*)|\[\s*(['"])([^'"]+)\2\s*\])/g;
  for (let m = re.exec(script); m; m = re.exec(script)) {
    const name = m[1] ?? m[3];
    if (!out.includes(name)) out.push(name);
  }
  return out;
}
