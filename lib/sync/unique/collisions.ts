import type { ExportChange, ExportResult } from '../../connectors/sdk';
import { EXTERNAL_OWNER, markExternal } from '../../storage/uniqueValues';
import { planExport, type DocChange, type ExportPlanInput } from '../export/plan';
import { ruleFailureMessage } from '../rules';
import { normaliseValue } from './candidates';
import type { UniqueAssignments, UniqueUse } from './assignments';
import { noteTaken, resolveUniqueValues, type ResolveContext } from './resolve';

/**
 * The target refused an add because a value the engine reserved is held there by something the engine does not
 * know (an account created outside it): LDAP entryAlreadyExists, AD's "already in use" constraint, PostgreSQL's
 * unique_violation. The value becomes `external` in its pool (with the target's message as the reason), the
 * object's unique values are chosen again (that value is now skipped, and explain says why), and the add is
 * sent again in the same page, up to {@link MAX_ROUNDS} times. Changes and results are replaced in place.
 */
const MAX_ROUNDS = 10;

/** Whether a refused add is a collision on a value (not some other refusal). */
export function isCollision(r: ExportResult): r is Extract<ExportResult, { status: 'error' }> {
  if (r.status !== 'error') return false;
  if (r.error.code === 'already_exists') return true;
  return r.error.code === 'constraint_violation' && /already|in use|unique|duplicate|exists/i.test(r.error.message);
}

export async function retryUniqueCollisions(args: {
  ctx: ResolveContext;
  loaded: ExportPlanInput;
  unique: UniqueAssignments;
  changes: DocChange[];
  results: ExportResult[];
  apply: (changes: ExportChange[]) => Promise<{ results: ExportResult[]; interrupted?: unknown }>;
}): Promise<{ results: ExportResult[]; interrupted?: unknown }> {
  const { ctx, loaded, unique, changes } = args;
  const results = [...args.results];
  const guessed = new Set<string>();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const refused = results
      .map((r, i) => i)
      .filter((i) => isCollision(results[i]) && changes[i].change.kind === 'add' && (unique.used.get(changes[i].doc.id)?.length ?? 0) > 0);
    if (!refused.length) break;
    for (const i of refused) {
      const r = results[i] as Extract<ExportResult, { status: 'error' }>;
      const doc = changes[i].doc;
      const used = unique.used.get(doc.id) ?? [];
      const again = guessed.has(doc.id);
      guessed.add(doc.id);
      for (const u of again ? used : collided(used, r)) {
        const reason = `the target refused it: ${r.error.message}`;
        await markExternal(u.pool, u.key, doc.id, reason, ctx.at);
        noteTaken(ctx, {
          pool: u.pool,
          key: u.key,
          value: u.value,
          owner: EXTERNAL_OWNER,
          ruleId: u.ruleId,
          connectorId: ctx.connectorId,
          reservedOn: ctx.at.toISOString(),
          reason,
        });
      }
    }
    const docs = refused.map((i) => changes[i].doc);
    await resolveUniqueValues(ctx, loaded, docs, unique);
    const plan = planExport({ ...loaded, docs, unique });
    const byDoc = new Map(plan.changes.map((c) => [c.doc.id, c]));
    const errors = new Map(plan.errors.map((e, k) => [e.object, e.message ?? String(k)]));
    const resend: number[] = [];
    for (const i of refused) {
      const next = byDoc.get(changes[i].doc.id);
      if (next && next.change.kind === 'add') {
        changes[i] = next;
        resend.push(i);
        continue;
      }
      const message =
        errors.get(changes[i].doc.anchorValue) ?? ruleFailureMessage(unique.errors.get(changes[i].doc.id) ?? new Error('no unique value is left'));
      results[i] = { status: 'error', error: { code: 'object_error', message } };
    }
    if (!resend.length) break;
    const applied = await args.apply(resend.map((i) => changes[i].change));
    applied.results.forEach((r, k) => (results[resend[k]] = r));
    // Interrupted part way: the adds not answered stay the refusals they were (the next export tries them again).
    if (applied.interrupted !== undefined) return { results, interrupted: applied.interrupted };
  }
  return { results };
}

/**
 * Which of an add's unique values the refusal is about: those the object found there holds (when the target
 * named it), else those whose value the target's message quotes (a DN, `'jsmith' already in use`), else those
 * whose attribute it names (`sAMAccountName`), else every one (the target does not say which collided). An
 * object refused again after its first guess: every one of its values (the guess was wrong).
 */
function collided(used: readonly UniqueUse[], r: Extract<ExportResult, { status: 'error' }>): UniqueUse[] {
  const attrs = r.existing?.attributes;
  if (attrs) {
    const held = used.filter((u) => {
      const v = Object.entries(attrs).find(([k]) => k.toLowerCase() === u.attribute.toLowerCase())?.[1];
      const vals = (Array.isArray(v) ? v : v === null || v === undefined ? [] : [v]).map(String);
      return vals.some((x) => normaliseValue(x, false) === normaliseValue(u.value, false));
    });
    if (held.length) return held;
  }
  const message = r.error.message.toLowerCase();
  // The target's own words first (a directory's diagnostic after "says:"), then the whole message.
  const said = message.includes('says:') ? message.slice(message.indexOf('says:')) : '';
  for (const text of [said, message]) {
    const quoted = used.filter((u) => text && text.includes(u.value.toLowerCase()));
    if (quoted.length) return quoted;
  }
  // Names as words of the message: `people_login_key` names `login`, `(sAMAccountName)` names sAMAccountName.
  const words = new Set(message.split(/[^a-z0-9]+/));
  const named = used.filter((u) => words.has(u.attribute.toLowerCase()));
  return named.length ? named : [...used];
}
