import type { Command } from 'commander';
import { CliError, EXIT, exitCodeOfRun, type ExitCode } from '../exitCodes';
import { col, renderTable, wideCol, writeOut } from '../output';
import { namesById, resolveId, resolveOptional } from '../resolve';
import { waitForRun, type Run } from '../wait';
import { action, paged, type Context } from './context';

/** The run columns; CONNECTOR by name (the id when the connector is gone), its id with `-o wide`. */
export const runColumns = (names: Map<string, string>) => [
  col('RUN ID', 'runId'),
  col('CONNECTOR', (r) => names.get(r.connectorId as string) || r.connectorId),
  wideCol('CONNECTOR ID', 'connectorId'),
  col('TYPE', (r) => `${r.runType}${r.dryRun ? ' (dry run)' : ''}`),
  col('STATUS', 'status'),
  col('STARTED', 'startedAt'),
  col('PROCESSED', 'stats.objectsProcessed'),
  col('ERRORS', 'stats.errors'),
];

/** A run's change columns; TARGET `mesh`, or `connector` and the connector's name (its id with `-o wide`). */
export const changeColumns = (names: Map<string, string>) => [
  col('TARGET', (c) => (c.target === 'connector' && c.connectorId ? `connector ${names.get(c.connectorId as string) || c.connectorId}` : c.target)),
  wideCol('CONNECTOR ID', 'connectorId'),
  col('OPERATION', 'operation'),
  col('OUTCOME', 'outcome'),
  col('ANCHOR', 'anchor'),
  col('ATTRIBUTES', (c) => Object.keys((c.attributes as object) ?? {}).join(', ')),
  col('ERROR', 'error'),
  col('DN', 'dn'),
];

/**
 * Print a run and end with its exit code: with --wait, follow it to its end first (live progress on a
 * terminal). The run's stats end the output in table mode; json/yaml print the run as the API answers it.
 */
export async function finish(ctx: Context, run: Run): Promise<ExitCode> {
  if (!ctx.opts.wait) {
    ctx.print(run);
    return EXIT.ok;
  }
  const ended = await waitForRun(ctx.api, run.runId);
  if (ctx.format !== 'table') ctx.print(ended);
  else {
    const s = ended.stats;
    writeOut(`run ${ended.runId} ${ended.status}\n`);
    writeOut(
      `${renderTable(
        [{ processed: s.objectsProcessed, created: s.objectsCreated, updated: s.objectsUpdated, deleted: s.objectsDeleted, errors: s.errors }],
        ['processed', 'created', 'updated', 'deleted', 'errors'].map((k) => col(k.toUpperCase(), k)),
      )}\n`,
    );
    if (ended.error) writeOut(`error: ${ended.error}\n`);
    if (ended.status === 'AwaitingApproval' && ended.approval) {
      for (const r of ended.approval.reasons) writeOut(`awaits approval: ${r.operation} ${r.count} over the limit ${r.limit}\n`);
      writeOut(`approve with: meshsync runs approve ${ended.runId} (another admin), or reject it; it expires ${ended.approval.expiresOn}\n`);
    }
  }
  return exitCodeOfRun(ended.status);
}

/** `runs`: history, start, follow, cancel, changes, plans (apply) and approval. */
export function registerRuns(program: Command): void {
  const r = program.command('runs').alias('run').description('Import and export runs');
  paged(
    r
      .command('ls')
      .description('Run history, newest first')
      .option('--connector <connector>', 'runs of one connector (id, id prefix or name)')
      .option('--status <status>', 'runs with this status')
      .option('--instance <id>', 'runs of one engine instance'),
  ).action(
    action(async (ctx) => {
      const { status, instance, skip, take } = ctx.opts;
      const connectorId = await resolveOptional(ctx.api, 'connector', ctx.opts.connector);
      const runs = await ctx.api.get('runs', { connectorId, status, instanceId: instance, skip, take });
      ctx.print(runs, ctx.format === 'table' ? runColumns(await namesById(ctx.api, 'connector')) : undefined);
    }),
  );
  r.command('show <runId>')
    .description('A run with its stats, progress and errors')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.get(`runs/${id}`))));
  r.command('wait <runId>')
    .description('Follow a run to its end with live progress; the exit code says how it ended')
    .action(action(async (ctx, id) => finish({ ...ctx, opts: { ...ctx.opts, wait: true } }, await ctx.api.get<Run>(`runs/${id}`))));

  r.command('import <connector>')
    .description('Start an import (delta by default)')
    .option('--full', 'a full import (FullImport)')
    .option('--full-sync', 'no source read: every connector-space object through the current rules (FullSync)')
    .option('--dry-run', 'plan only: nothing is written; the run is a plan that can be applied')
    .option('-w, --wait', 'follow the run to its end (live progress); exit code by its status')
    .action(
      action(async (ctx, ref) => {
        if (ctx.opts.full && ctx.opts.fullSync) throw new CliError('--full and --full-sync exclude each other.', EXIT.usage);
        const id = await resolveId(ctx.api, 'connector', ref);
        const runType = ctx.opts.full ? 'FullImport' : ctx.opts.fullSync ? 'FullSync' : 'DeltaImport';
        const body: Record<string, unknown> = { runType };
        if (ctx.opts.dryRun) body.dryRun = true;
        return finish(ctx, await ctx.api.post<Run>(`connectors/${id}/import`, body));
      }),
    );
  r.command('export <connector>')
    .description('Start an export of the staged changes')
    .option('--dry-run', 'plan only: nothing is written to the target')
    .option('-w, --wait', 'follow the run to its end (live progress); exit code by its status')
    .action(
      action(async (ctx, ref) =>
        finish(ctx, await ctx.api.post<Run>(`connectors/${await resolveId(ctx.api, 'connector', ref)}/export`, ctx.opts.dryRun ? { dryRun: true } : {})),
      ),
    );
  r.command('cancel <runId>')
    .description('Cancel a Queued or Running run')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.post(`runs/${id}/cancel`))));
  paged(
    r
      .command('changes <runId>')
      .description('What a run changed or would change, object by object')
      .option('--operation <op>', 'Add, Update, Delete or Rename')
      .option('--outcome <outcome>', 'applied, planned, failed or drifted'),
  ).action(
    action(async (ctx, id) => {
      const { operation, outcome, skip, take } = ctx.opts;
      const changes = await ctx.api.get<{ items: { target?: string }[] }>(`runs/${id}/changes`, { operation, outcome, skip, take });
      const toConnector = ctx.format === 'table' && changes.items?.some((c) => c.target === 'connector');
      ctx.print(changes, changeColumns(toConnector ? await namesById(ctx.api, 'connector') : new Map()));
    }),
  );
  r.command('apply <runId>')
    .description("Apply a dry run's plan exactly (objects whose inputs changed are skipped as drifted)")
    .option('-w, --wait', 'follow the new run to its end')
    .action(action(async (ctx, id) => finish(ctx, await ctx.api.post<Run>(`runs/${id}/apply`))));
  r.command('approve <runId>')
    .description('Approve a run that awaits approval: it applies its plan')
    .option('-w, --wait', 'follow the run to its end')
    .action(action(async (ctx, id) => finish(ctx, await ctx.api.post<Run>(`runs/${id}/approve`))));
  r.command('reject <runId>')
    .description('Reject a run that awaits approval')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.post(`runs/${id}/reject`))));
}
