import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { cellText, col, wideCol, writeOut } from '../output';
import { namesById, resolveId, resolveOptional, type Kind } from '../resolve';
import { action, heldOr, isHeldChange, paged, readJsonFile, type Context } from './context';

/** An argument naming a rule or a schedule: its id, a unique id prefix or its name (docs/cli.md, "Naming things"). */
const rule = (ctx: Context, ref: string) => resolveId(ctx.api, 'rule', ref);
const schedule = (ctx: Context, ref: string) => resolveId(ctx.api, 'schedule', ref);
const NAMED_TYPES = new Set<string>(['connector', 'rule', 'schedule']);

const ruleColumns = (connectors: Map<string, string>) => [
  col('RULE ID', 'ruleId'),
  col('NAME', 'ruleName'),
  col('TYPE', 'ruleType'),
  col('CONNECTOR', (r) => (r.connectorId ? connectors.get(r.connectorId as string) || r.connectorId : '')),
  wideCol('CONNECTOR ID', 'connectorId'),
  col('SOURCE', 'sourceAttribute'),
  col('TARGET', 'targetAttribute'),
  col('PRIORITY', 'priority'),
];
const INSTANCE_COLUMNS = [col('ID', 'id'), col('NAME', 'name'), col('STATUS', 'status'), col('LAST HEARTBEAT', 'lastHeartbeat')];
/** Schedule columns; STEPS: each step's run type and its connectors by name. */
const scheduleColumns = (connectors: Map<string, string>) => [
  col('SCHEDULE ID', 'scheduleId'),
  col('NAME', 'name'),
  col('STEPS', (s) =>
    ((s.steps as { runType: string; connectorIds?: string[] }[]) ?? [])
      .map((step) => `${step.runType} ${(step.connectorIds ?? []).map((id) => connectors.get(id) || id).join(', ')}`)
      .join('; '),
  ),
  col('CRON', 'cron'),
  col('TIME ZONE', 'timeZone'),
  col('ENABLED', 'isEnabled'),
  col('NEXT RUN', 'nextRunOn'),
  col('LAST RUN', (s) => (s.lastRun ? `${(s.lastRun as { status: string }).status} ${(s.lastRun as { startedOn: string }).startedOn}` : '')),
];
const SCHEDULE_RUN_COLUMNS = [
  col('SCHEDULE RUN ID', 'scheduleRunId'),
  col('TRIGGER', 'trigger'),
  col('STATUS', 'status'),
  col('STARTED', 'startedOn'),
  col('COMPLETED', 'completedOn'),
];
/** The connector runs of one schedule run, step by step. */
const STEP_RUN_COLUMNS = [
  col('STEP', 'step'),
  col('RUN TYPE', 'runType'),
  col('CONNECTOR', 'connector'),
  wideCol('CONNECTOR ID', 'connectorId'),
  { header: 'RUN ID', get: 'runId', whole: true },
  col('STATUS', 'status'),
];
/** Audit columns; NAME: the connector's, rule's or schedule's current name (empty once it is gone). */
const auditColumns = (names: Partial<Record<string, Map<string, string>>>) => [
  col('TIME', 'timestamp'),
  col('ACTION', 'action'),
  col('TARGET TYPE', 'targetType'),
  { header: 'TARGET', get: 'targetId', whole: true },
  col('NAME', (a) => names[a.targetType as string]?.get(a.targetId as string) ?? ''),
  col('ACTOR', 'actorUpn'),
  col('OUTCOME', 'outcome'),
];
const HISTORY_COLUMNS = [
  col('VERSION ID', 'versionId'),
  col('TIME', 'timestamp'),
  col('ACTION', 'action'),
  col('TARGET TYPE', 'targetType'),
  { header: 'TARGET', get: 'targetId', whole: true },
  col('NAME', (v) => {
    const doc = (v.after ?? v.before) as { name?: string; ruleName?: string } | null | undefined;
    return doc?.name ?? doc?.ruleName ?? '';
  }),
  col('ACTOR', 'actorUpn'),
];
const CHANGE_COLUMNS = [
  col('CHANGE ID', 'changeId'),
  col('STATUS', 'status'),
  col('ACTION', 'action'),
  col('TARGET TYPE', 'targetType'),
  { header: 'TARGET', get: 'targetId', whole: true },
  col('NAME', 'targetName'),
  col('REQUESTED BY', 'requestedBy'),
  col('EXPIRES', 'expiresOn'),
];

/** An item of a configuration import's answer. */
interface ImportedChange {
  action: string;
  targetType: string;
  targetId: string;
  name: string;
  fields?: { path: string; before: unknown; after: unknown }[];
}

interface ListedScheduleRun {
  scheduleRunId: string;
  steps?: { runType: string; runs: { connectorId: string; runId?: string | null; status: string }[] }[];
}

const shown = (v: unknown) => (v === null || v === undefined ? '(not set)' : cellText(v) || '""');

/** rules, instances, schedules, config, audit, health, metrics. */
export function registerAdmin(program: Command): void {
  const r = program.command('rules').alias('rule').description('Join, projection, flow and composer rules');
  paged(
    r
      .command('ls')
      .description('List rules')
      .option('--connector <connector>', 'rules of one connector (id, id prefix or name)')
      .option('--type <ruleType>', 'rules of one type'),
  ).action(
    action(async (ctx) => {
      const { type, skip, take } = ctx.opts;
      const connectorId = await resolveOptional(ctx.api, 'connector', ctx.opts.connector);
      const rules = await ctx.api.get('rules', { connectorId, ruleType: type, skip, take });
      ctx.print(rules, ctx.format === 'table' ? ruleColumns(await namesById(ctx.api, 'connector')) : undefined);
    }),
  );
  r.command('show <rule>')
    .description('A rule')
    .action(action(async (ctx, ref) => ctx.print(await ctx.api.get(`rules/${await rule(ctx, ref)}`))));
  r.command('create')
    .description('Create a rule from a JSON file (- reads standard input)')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(action(async (ctx) => ctx.print(await ctx.api.post('rules', readJsonFile(ctx.opts.file)))));
  r.command('update <rule>')
    .description('Replace a rule from a JSON file')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(
      action(async (ctx, ref) => {
        const body = readJsonFile(ctx.opts.file);
        ctx.print(await ctx.api.put(`rules/${await rule(ctx, ref)}`, body));
      }),
    );
  r.command('delete <rule>')
    .description('Delete a rule')
    .action(action(async (ctx, ref) => void (await ctx.api.delete(`rules/${await rule(ctx, ref)}`))));

  const i = program.command('instances').alias('instance').description('Engine instances');
  i.command('ls')
    .description('List engine instances')
    .action(action(async (ctx) => ctx.print(await ctx.api.get('instances'), INSTANCE_COLUMNS)));
  i.command('pause <id>')
    .description('Pause an instance (its runs wait Queued)')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.post(`instances/${id}/pause`))));
  i.command('resume <id>')
    .description('Resume a paused instance')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.post(`instances/${id}/resume`))));
  i.command('rename <id> <name>')
    .description('Rename an instance')
    .action(action(async (ctx, id, name) => ctx.print(await ctx.api.post(`instances/${id}/rename`, { name }))));
  i.command('remove <id>')
    .description('Remove an offline instance and unassign its connectors')
    .action(action(async (ctx, id) => void (await ctx.api.delete(`instances/${id}`))));

  const s = program.command('schedules').alias('schedule').description('Schedules: runs that go by themselves');
  paged(s.command('ls').description('List schedules')).action(
    action(async (ctx) => {
      const page = await ctx.api.get('schedules', { skip: ctx.opts.skip, take: ctx.opts.take });
      ctx.print(page, ctx.format === 'table' ? scheduleColumns(await namesById(ctx.api, 'connector')) : undefined);
    }),
  );
  s.command('show <schedule>')
    .description('A schedule with its next tick and newest run')
    .action(action(async (ctx, ref) => ctx.print(await ctx.api.get(`schedules/${await schedule(ctx, ref)}`))));
  s.command('create')
    .description('Create a schedule from a JSON file')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(action(async (ctx) => ctx.print(await ctx.api.post('schedules', readJsonFile(ctx.opts.file)))));
  s.command('update <schedule>')
    .description('Replace a schedule from a JSON file')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(
      action(async (ctx, ref) => {
        const body = readJsonFile(ctx.opts.file);
        ctx.print(await ctx.api.put(`schedules/${await schedule(ctx, ref)}`, body));
      }),
    );
  s.command('delete <schedule>')
    .description('Delete a schedule and its run history')
    .action(action(async (ctx, ref) => void (await ctx.api.delete(`schedules/${await schedule(ctx, ref)}`))));
  s.command('run <schedule>')
    .description('Start a schedule run now')
    .action(action(async (ctx, ref) => ctx.print(await ctx.api.post(`schedules/${await schedule(ctx, ref)}/run`))));
  paged(s.command('runs <schedule> [scheduleRunId]').description("A schedule's runs, or one of them with its steps")).action(
    action(async (ctx, ref, runId) => {
      const id = await schedule(ctx, ref);
      if (runId) {
        const detail = await ctx.api.get<ListedScheduleRun & Record<string, unknown>>(`schedules/${id}/runs/${runId}`);
        if (ctx.format === 'json' || ctx.format === 'yaml') return void ctx.print(detail);
        // The steps as a table: each connector's run by the connector's name, its run id whole.
        const names = await namesById(ctx.api, 'connector');
        const { steps: detailSteps, ...rest } = detail;
        ctx.print(rest);
        const rows = (detailSteps ?? []).flatMap((st, i) =>
          st.runs.map((x) => ({ step: i + 1, runType: st.runType, connector: names.get(x.connectorId) ?? '', ...x })),
        );
        return void ctx.print({ items: rows, totalCount: rows.length }, STEP_RUN_COLUMNS);
      }
      const runs = await ctx.api.get(`schedules/${id}/runs`, { skip: ctx.opts.skip, take: ctx.opts.take });
      if (ctx.format !== 'table') return void ctx.print(runs);
      // Each step with its connectors by name and the status of each one's run: "Export: LDAP Completed, AD Failed".
      const names = await namesById(ctx.api, 'connector');
      const steps = (r: ListedScheduleRun) =>
        (r.steps ?? []).map((st) => `${st.runType}: ${st.runs.map((x) => `${names.get(x.connectorId) ?? x.connectorId} ${x.status}`).join(', ')}`).join('; ');
      ctx.print(runs, SCHEDULE_RUN_COLUMNS);
      // A line per schedule run, whole at any width (a column would be cut).
      for (const r of (runs as { items: ListedScheduleRun[] }).items) writeOut(`steps of ${r.scheduleRunId}: ${steps(r)}\n`);
    }),
  );
  s.command('cancel-run <schedule> <scheduleRunId>')
    .description('Cancel a running schedule run and its unfinished runs')
    .action(action(async (ctx, ref, runId) => ctx.print(await ctx.api.post(`schedules/${await schedule(ctx, ref)}/runs/${runId}/cancel`))));

  const c = program.command('config').description('The whole configuration: history, restore, export and import');
  c.command('export')
    .description('The configuration as one JSON document (secrets as ********)')
    .option('--file <file>', 'write it to a file instead of standard output')
    .action(
      action(async (ctx) => {
        const doc = await ctx.api.get('config/export');
        if (ctx.opts.file) writeFileSync(ctx.opts.file, `${JSON.stringify(doc, null, 2)}\n`);
        else process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
      }),
    );
  c.command('import <file>')
    .description('Import a configuration document (all or nothing); - reads standard input')
    .option('--dry-run', 'list the changes, change nothing')
    .option('--prune', 'delete what the document lacks')
    .action(
      action(async (ctx, file) => {
        const res = await ctx.api.post('config/import', readJsonFile(file), {
          dryRun: ctx.opts.dryRun ? 'true' : 'false',
          prune: ctx.opts.prune ? 'true' : undefined,
        });
        // An import that loosens a guard rail is held whole for a second Admin (exit 8).
        if (isHeldChange(res)) return heldOr(ctx, res, () => undefined);
        const changes = (res as { changes?: ImportedChange[] }).changes ?? [];
        if (ctx.format !== 'table') return void ctx.print(res);
        ctx.print({ items: changes, totalCount: changes.length }, [
          col('ACTION', 'action'),
          col('TARGET TYPE', 'targetType'),
          col('TARGET', 'targetId'),
          col('NAME', 'name'),
          col('FIELDS', (c) => ((c as unknown as ImportedChange).fields ?? []).map((f) => f.path).join(', ')),
        ]);
        // What changes in each updated item, a line per field (secrets as ********).
        for (const c of changes)
          for (const f of c.fields ?? []) writeOut(`${c.action} ${c.targetType} ${c.name}: ${f.path} ${shown(f.before)} -> ${shown(f.after)}\n`);
        writeOut((res as { applied?: boolean }).applied ? 'applied\n' : 'not applied (dry run)\n');
      }),
    );
  paged(
    c
      .command('history')
      .description('Versions of connectors, rules and schedules, newest first')
      .option('--type <targetType>', 'connector, rule or schedule')
      .option('--id <target>', 'one target (with --type, also an id prefix or a name)'),
  ).action(
    action(async (ctx) => {
      const { type, skip, take } = ctx.opts;
      const id = NAMED_TYPES.has(type) ? await resolveOptional(ctx.api, type as Kind, ctx.opts.id) : ctx.opts.id;
      ctx.print(await ctx.api.get('config/history', { targetType: type, targetId: id, skip, take }), HISTORY_COLUMNS);
    }),
  );
  c.command('restore <versionId>')
    .description('Put a connector, rule or schedule back as that version left it (one that loosens a guard rail waits for a second Admin: exit 8)')
    .action(
      action(async (ctx, id) => {
        const res = await ctx.api.post(`config/history/${id}/restore`);
        return heldOr(ctx, res, () => ctx.print(res));
      }),
    );

  const held = c.command('changes').description('Configuration changes held for a second Admin (a guard rail loosened, a forced delete over its threshold)');
  paged(
    held
      .command('ls')
      .description('Held configuration changes, newest first')
      .option('--status <status>', 'AwaitingApproval, Applied, Rejected, Expired or Failed'),
  ).action(
    action(async (ctx) => {
      const { status, skip, take } = ctx.opts;
      ctx.print(await ctx.api.get('config/changes', { status, skip, take }), CHANGE_COLUMNS);
    }),
  );
  held
    .command('show <changeId>')
    .description('One held change, with the writes it makes (secrets as ********)')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.get(`config/changes/${id}`))));
  held
    .command('approve <changeId>')
    .description('Apply a held change as it was submitted (another Admin than who asked)')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.post(`config/changes/${id}/approve`))));
  held
    .command('reject <changeId>')
    .description('Reject a held change: nothing is applied')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.post(`config/changes/${id}/reject`))));

  paged(
    program
      .command('audit')
      .description('Audit records, newest first')
      .option('--target-type <type>', 'e.g. connector, rule, run')
      .option('--target <target>', 'one target (with --target-type connector, rule or schedule, also an id prefix or a name)')
      .option('--actor <upn>', 'one actor'),
  ).action(
    action(async (ctx) => {
      const { targetType, actor, skip, take } = ctx.opts;
      const target = NAMED_TYPES.has(targetType) ? await resolveOptional(ctx.api, targetType as Kind, ctx.opts.target) : ctx.opts.target;
      const page = await ctx.api.get<{ items: { targetType: string }[] }>('audit', { targetType, targetId: target, actor, skip, take });
      if (ctx.format !== 'table') return void ctx.print(page);
      const names: Partial<Record<string, Map<string, string>>> = {};
      for (const kind of new Set(page.items.map((a) => a.targetType))) if (NAMED_TYPES.has(kind)) names[kind] = await namesById(ctx.api, kind as Kind);
      ctx.print(page, auditColumns(names));
    }),
  );
  program
    .command('health')
    .description('Service health (no sign-in needed)')
    .action(action(async (ctx) => ctx.print(await ctx.api.get('health'))));
  program
    .command('metrics')
    .description('The Prometheus metrics, as text')
    .action(action(async (ctx) => void writeOut(await ctx.api.text('metrics'))));
}
