import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { cellText, col, writeOut } from '../output';
import { action, heldOr, isHeldChange, paged, readJsonFile } from './context';

const RULE_COLUMNS = [
  col('RULE ID', 'ruleId'),
  col('NAME', 'ruleName'),
  col('TYPE', 'ruleType'),
  col('CONNECTOR', 'connectorId'),
  col('SOURCE', 'sourceAttribute'),
  col('TARGET', 'targetAttribute'),
  col('PRIORITY', 'priority'),
];
const INSTANCE_COLUMNS = [col('ID', 'id'), col('NAME', 'name'), col('STATUS', 'status'), col('LAST HEARTBEAT', 'lastHeartbeat')];
const SCHEDULE_COLUMNS = [
  col('SCHEDULE ID', 'scheduleId'),
  col('NAME', 'name'),
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
const AUDIT_COLUMNS = [
  col('TIME', 'timestamp'),
  col('ACTION', 'action'),
  col('TARGET TYPE', 'targetType'),
  col('TARGET', 'targetId'),
  col('ACTOR', 'actorUpn'),
  col('OUTCOME', 'outcome'),
];
const HISTORY_COLUMNS = [
  col('VERSION ID', 'versionId'),
  col('TIME', 'timestamp'),
  col('ACTION', 'action'),
  col('TARGET TYPE', 'targetType'),
  col('TARGET', 'targetId'),
  col('ACTOR', 'actorUpn'),
];
const CHANGE_COLUMNS = [
  col('CHANGE ID', 'changeId'),
  col('STATUS', 'status'),
  col('ACTION', 'action'),
  col('TARGET TYPE', 'targetType'),
  col('TARGET', 'targetId'),
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
  steps?: { runType: string; runs: { connectorId: string; status: string }[] }[];
}

const shown = (v: unknown) => (v === null || v === undefined ? '(not set)' : cellText(v) || '""');

/** rules, instances, schedules, config, audit, health, metrics. */
export function registerAdmin(program: Command): void {
  const r = program.command('rules').alias('rule').description('Join, projection, flow and composer rules');
  paged(r.command('ls').description('List rules').option('--connector <id>', 'rules of one connector').option('--type <ruleType>', 'rules of one type')).action(
    action(async (ctx) => {
      const { connector, type, skip, take } = ctx.opts;
      ctx.print(await ctx.api.get('rules', { connectorId: connector, ruleType: type, skip, take }), RULE_COLUMNS);
    }),
  );
  r.command('show <ruleId>')
    .description('A rule')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.get(`rules/${id}`))));
  r.command('create')
    .description('Create a rule from a JSON file (- reads standard input)')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(action(async (ctx) => ctx.print(await ctx.api.post('rules', readJsonFile(ctx.opts.file)))));
  r.command('update <ruleId>')
    .description('Replace a rule from a JSON file')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.put(`rules/${id}`, readJsonFile(ctx.opts.file)))));
  r.command('delete <ruleId>')
    .description('Delete a rule')
    .action(action(async (ctx, id) => void (await ctx.api.delete(`rules/${id}`))));

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
    action(async (ctx) => ctx.print(await ctx.api.get('schedules', { skip: ctx.opts.skip, take: ctx.opts.take }), SCHEDULE_COLUMNS)),
  );
  s.command('show <scheduleId>')
    .description('A schedule with its next tick and newest run')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.get(`schedules/${id}`))));
  s.command('create')
    .description('Create a schedule from a JSON file')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(action(async (ctx) => ctx.print(await ctx.api.post('schedules', readJsonFile(ctx.opts.file)))));
  s.command('update <scheduleId>')
    .description('Replace a schedule from a JSON file')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.put(`schedules/${id}`, readJsonFile(ctx.opts.file)))));
  s.command('delete <scheduleId>')
    .description('Delete a schedule and its run history')
    .action(action(async (ctx, id) => void (await ctx.api.delete(`schedules/${id}`))));
  s.command('run <scheduleId>')
    .description('Start a schedule run now')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.post(`schedules/${id}/run`))));
  paged(s.command('runs <scheduleId> [scheduleRunId]').description("A schedule's runs, or one of them with its steps")).action(
    action(async (ctx, id, runId) => {
      if (runId) return void ctx.print(await ctx.api.get(`schedules/${id}/runs/${runId}`));
      const runs = await ctx.api.get(`schedules/${id}/runs`, { skip: ctx.opts.skip, take: ctx.opts.take });
      if (ctx.format !== 'table') return void ctx.print(runs);
      // Each step with its connectors by name and the status of each one's run: "Export: LDAP Completed, AD Failed".
      const { connectors } = await ctx.api.get<{ connectors: { id: string; name: string }[] }>('connectors');
      const names = new Map(connectors.map((c) => [c.id, c.name]));
      const steps = (r: ListedScheduleRun) =>
        (r.steps ?? []).map((st) => `${st.runType}: ${st.runs.map((x) => `${names.get(x.connectorId) ?? x.connectorId} ${x.status}`).join(', ')}`).join('; ');
      ctx.print(runs, SCHEDULE_RUN_COLUMNS);
      // A line per schedule run, whole at any width (a column would be cut).
      for (const r of (runs as { items: ListedScheduleRun[] }).items) writeOut(`steps of ${r.scheduleRunId}: ${steps(r)}\n`);
    }),
  );
  s.command('cancel-run <scheduleId> <scheduleRunId>')
    .description('Cancel a running schedule run and its unfinished runs')
    .action(action(async (ctx, id, runId) => ctx.print(await ctx.api.post(`schedules/${id}/runs/${runId}/cancel`))));

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
      .option('--id <targetId>', 'one target'),
  ).action(
    action(async (ctx) => {
      const { type, id, skip, take } = ctx.opts;
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
      .option('--target <id>', 'one target')
      .option('--actor <upn>', 'one actor'),
  ).action(
    action(async (ctx) => {
      const { targetType, target, actor, skip, take } = ctx.opts;
      ctx.print(await ctx.api.get('audit', { targetType, targetId: target, actor, skip, take }), AUDIT_COLUMNS);
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
