import type { Command } from 'commander';
import type { Api } from '../api';
import { CliError, EXIT } from '../exitCodes';
import { col, terminalSafe, writeOut } from '../output';
import { namesById, resolveId, resolveOptional } from '../resolve';
import { action, paged, toInt, type Context } from './context';

/**
 * `cases`: correlation cases (docs/correlation.md): list, show, decide one or many, and `cases work`, a queue an
 * operator works through with the keyboard. `space join|disconnect|undo`: the manual join and split of any
 * connector-space object. Connectors are named by name; a case by its id, a unique id prefix, or the display
 * name of its object.
 */

interface Match {
  ruleName: string;
  how: string;
  similarity: number;
}
interface Candidate {
  meshObjectId: string;
  anchor: string;
  displayName: string;
  score: number;
  matched: Match[];
}
interface Case {
  caseId: string;
  connectorId: string;
  csObjectId: string;
  object: { anchor: string; dn: string | null; displayName: string; attributes: Record<string, unknown> };
  candidates: Candidate[];
  reason: string;
  state: string;
  decision: string | null;
  meshObjectId: string | null;
}
interface CaseList {
  items: Case[];
  totalCount: number;
}

const DECISIONS = ['join', 'project', 'ignore'];
const FULL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const how = (m: Match) => (m.how === 'fuzzy' ? `fuzzy(${m.similarity})` : m.how);
const best = (c: Case) => (c.candidates[0] ? `${c.candidates[0].displayName} (${c.candidates[0].score})` : '');

function caseColumns(names: Map<string, string>) {
  return [
    col('CASE ID', 'caseId'),
    col('CONNECTOR', (i) => names.get(String(i.connectorId)) ?? i.connectorId),
    col('OBJECT', (i) => (i as unknown as Case).object.displayName),
    col('REASON', 'reason'),
    col('CANDIDATES', (i) => (i as unknown as Case).candidates.length),
    col('BEST', (i) => best(i as unknown as Case)),
    col('STATE', 'state'),
  ];
}

/** Every case a query gives (all pages). */
async function allCases(api: Api, query: Record<string, string | number | undefined>): Promise<Case[]> {
  const out: Case[] = [];
  for (let skip = 0; ; skip += 200) {
    const page = await api.get<CaseList>('correlation-cases', { ...query, skip, take: 200 });
    out.push(...page.items);
    if (!page.items.length || out.length >= page.totalCount) return out;
  }
}

/** The case `ref` names: its id, a unique id prefix (4 characters or more), or its object's display name or anchor among open cases. */
async function resolveCase(api: Api, ref: string): Promise<string> {
  const text = ref.trim();
  if (FULL_ID.test(text)) return text.toLowerCase();
  const lower = text.toLowerCase();
  const open = await allCases(api, { state: 'open' });
  const found = open.filter(
    (c) => (lower.length >= 4 && c.caseId.startsWith(lower)) || c.object.displayName.trim().toLowerCase() === lower || c.object.anchor.toLowerCase() === lower,
  );
  if (found.length === 1) return found[0].caseId;
  if (found.length > 1)
    throw new CliError(
      `'${text}' matches ${found.length} open cases: ${found.map((c) => `${c.object.displayName} (${c.caseId})`).join(', ')}; give the id.`,
      EXIT.usage,
    );
  throw new CliError(`Case '${text}' is not an open case: give its id, a unique id prefix or its object's display name (meshsync cases ls).`, EXIT.notFound);
}

/** A case as a screen of text: the object, then its candidates numbered, each with its score and matches. */
export function renderCase(c: Case, connectorName: string): string {
  const lines = [
    `Case ${c.caseId}  ${c.state}${c.decision ? ` (${c.decision})` : ''}  reason: ${c.reason}`,
    `Connector: ${connectorName}`,
    `Object:    ${c.object.displayName}  [${c.object.anchor}]`,
  ];
  if (c.object.dn) lines.push(`DN:        ${c.object.dn}`);
  for (const [k, v] of Object.entries(c.object.attributes)) lines.push(`  ${k}: ${Array.isArray(v) ? v.join('; ') : v === null ? '(none)' : String(v)}`);
  lines.push('', c.candidates.length ? 'Candidates:' : 'No candidate.');
  c.candidates.forEach((x, i) => {
    lines.push(`  ${i + 1}. ${x.displayName}  [${x.anchor}]  score ${x.score}  ${x.matched.map((m) => `${m.ruleName}: ${how(m)}`).join(', ')}`);
  });
  return terminalSafe(lines.join('\n')) + '\n';
}

export function registerCases(program: Command): void {
  const c = program.command('cases').alias('case').description('Correlation cases: uncertain joins an operator decides');
  paged(
    c
      .command('ls')
      .description('List correlation cases (default: open ones)')
      .option('--connector <connector>', 'only this connector (name or id)')
      .option('--state <state>', 'open (default), decided, closed or all')
      .option('--reason <reason>', 'noKey, severalCandidates or belowThreshold')
      .option('--min-score <n>', "the best candidate's score at least this", toInt),
  ).action(
    action(async (ctx) => {
      const { connector, state, reason, minScore, skip, take } = ctx.opts;
      const connectorId = await resolveOptional(ctx.api, 'connector', connector);
      const res = await ctx.api.get<CaseList>('correlation-cases', {
        connectorId,
        state: state === 'all' ? undefined : (state ?? 'open'),
        reason,
        minScore,
        skip,
        take,
      });
      ctx.print(res, caseColumns(await namesById(ctx.api, 'connector')));
    }),
  );
  c.command('show <case>')
    .description('One case: the object and each candidate with its score and the rules that matched')
    .action(
      action(async (ctx, ref) => {
        const found = await ctx.api.get<Case>(`correlation-cases/${await resolveCase(ctx.api, ref)}`);
        if (ctx.format !== 'table') return ctx.print(found);
        const names = await namesById(ctx.api, 'connector');
        writeOut(renderCase(found, names.get(found.connectorId) ?? found.connectorId));
      }),
    );
  c.command('decide <case> <decision>')
    .description('Decide an open case: join (the best candidate, or --to), project or ignore')
    .option('--to <candidate>', 'with join: a candidate number (1, 2...) or a mesh object id')
    .action(
      action(async (ctx, ref, decision) => {
        if (!DECISIONS.includes(decision)) throw new CliError(`'${decision}' is not a decision: join, project or ignore.`, EXIT.usage);
        const id = await resolveCase(ctx.api, ref);
        const body: { decision: string; meshObjectId?: string } = { decision };
        if (ctx.opts.to !== undefined) {
          if (decision !== 'join') throw new CliError('--to goes with join only.', EXIT.usage);
          body.meshObjectId = await candidateId(ctx, id, String(ctx.opts.to));
        }
        ctx.print(await ctx.api.post(`correlation-cases/${id}/decide`, body), caseColumns(await namesById(ctx.api, 'connector')));
      }),
    );
  c.command('decide-all <decision>')
    .description('Decide every open case the filter matches (join: each to its best candidate; ties are skipped)')
    .option('--connector <connector>', 'only this connector (name or id)')
    .option('--reason <reason>', 'noKey, severalCandidates or belowThreshold')
    .option('--min-score <n>', "the best candidate's score at least this", toInt)
    .option('--max-candidates <n>', 'at most this many candidates', toInt)
    .action(
      action(async (ctx, decision) => {
        if (!DECISIONS.includes(decision)) throw new CliError(`'${decision}' is not a decision: join, project or ignore.`, EXIT.usage);
        const { connector, reason, minScore, maxCandidates } = ctx.opts;
        const connectorId = await resolveOptional(ctx.api, 'connector', connector);
        const filter = { connectorId, reason, minScore, maxCandidates };
        ctx.print(await ctx.api.post('correlation-cases/decide', { filter: JSON.parse(JSON.stringify(filter)), decision }));
      }),
    );
  c.command('work')
    .description('Work through the open cases one by one: j join the best, 1-9 join that candidate, p project, i ignore, n next, q quit')
    .option('--connector <connector>', 'only this connector (name or id)')
    .option('--reason <reason>', 'noKey, severalCandidates or belowThreshold')
    .action(action(async (ctx) => work(ctx)));

  const s = program.commands.find((x) => x.name() === 'space');
  if (!s) return;
  s.command('join <connector> <csObjectId> <meshObjectId>')
    .description('Join the object to a mesh object by hand (kept until undone)')
    .action(
      action(async (ctx, ref, cs, meshObjectId) =>
        ctx.print(await ctx.api.post(`connectors/${await resolveId(ctx.api, 'connector', ref)}/space/${cs}/join`, { meshObjectId })),
      ),
    );
  s.command('disconnect <connector> <csObjectId>')
    .description('Make the object an explicit disconnector: out of joins and projection until undone')
    .action(action(async (ctx, ref, cs) => ctx.print(await ctx.api.post(`connectors/${await resolveId(ctx.api, 'connector', ref)}/space/${cs}/disconnect`))));
  s.command('undo <connector> <csObjectId>')
    .description("Undo the object's join, project or ignore decision: its rules decide again")
    .action(action(async (ctx, ref, cs) => ctx.print(await ctx.api.post(`connectors/${await resolveId(ctx.api, 'connector', ref)}/space/${cs}/undo`))));
}

/** `--to`: a candidate's number (1-based) or a mesh object id. */
async function candidateId(ctx: Context, caseId: string, to: string): Promise<string> {
  if (FULL_ID.test(to)) return to;
  const n = Number(to);
  const found = await ctx.api.get<Case>(`correlation-cases/${caseId}`);
  if (!Number.isInteger(n) || n < 1 || n > found.candidates.length)
    throw new CliError(`--to ${to}: give a candidate number from 1 to ${found.candidates.length} or a mesh object id.`, EXIT.usage);
  return found.candidates[n - 1].meshObjectId;
}

/** One key press from a raw terminal. */
function readKey(): Promise<string> {
  return new Promise((resolve) => process.stdin.once('data', (d: Buffer) => resolve(d.toString('utf8'))));
}

/**
 * The queue: the open cases (as listed when it starts, oldest first), one per screen. A key decides the case
 * shown and moves on; `n` leaves it open for later; `q` (or Ctrl-C) ends. A refused decision (a run started, the
 * candidate was taken) is shown and the case stays.
 */
async function work(ctx: Context): Promise<void> {
  if (!process.stdin.isTTY) throw new CliError('cases work needs a terminal (use cases decide in scripts).', EXIT.usage);
  const connectorId = await resolveOptional(ctx.api, 'connector', ctx.opts.connector);
  const queue = await allCases(ctx.api, { state: 'open', connectorId, reason: ctx.opts.reason });
  const names = await namesById(ctx.api, 'connector');
  const tally = { decided: 0, skipped: 0 };
  process.stdin.setRawMode(true);
  process.stdin.resume();
  let note = '';
  try {
    for (let i = 0; i < queue.length;) {
      const item = queue[i];
      // The one control sequence the queue writes itself (writeOut removes any from the service's text): clear the screen.
      process.stdout.write('\x1b[2J\x1b[H');
      writeOut(`Open case ${i + 1} of ${queue.length}\n`);
      writeOut(renderCase(item, names.get(item.connectorId) ?? item.connectorId));
      writeOut(`\n${note}\n[j] join best  [1-9] join candidate  [p] project  [i] ignore  [n] next  [q] quit\n`);
      note = '';
      const key = (await readKey()).toLowerCase();
      if (key === 'q' || key === '\u0003') break;
      if (key === 'n') {
        tally.skipped++;
        i++;
        continue;
      }
      let body: { decision: string; meshObjectId?: string } | null = null;
      if (key === 'j') body = { decision: 'join' };
      else if (key === 'p') body = { decision: 'project' };
      else if (key === 'i') body = { decision: 'ignore' };
      else if (/^[1-9]$/.test(key)) {
        const candidate = item.candidates[Number(key) - 1];
        if (!candidate) {
          note = `There is no candidate ${key}.`;
          continue;
        }
        body = { decision: 'join', meshObjectId: candidate.meshObjectId };
      }
      if (!body) {
        note = `'${terminalSafe(key)}' does nothing here.`;
        continue;
      }
      try {
        const done = await ctx.api.post<Case>(`correlation-cases/${item.caseId}/decide`, body);
        tally.decided++;
        writeOut(`${done.decision}: ${item.object.displayName}\n`);
        i++;
      } catch (err) {
        note = `Not decided: ${(err as Error).message}`;
      }
    }
  } finally {
    process.stdin.setRawMode(false);
    process.stdin.pause();
  }
  writeOut(`\nDone: ${tally.decided} decided, ${tally.skipped} left for later.\n`);
}
