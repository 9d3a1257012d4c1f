import type { Command } from 'commander';
import { col } from '../output';
import { EXIT } from '../exitCodes';
import { resolveId } from '../resolve';
import { action, heldOr, paged, readJsonFile, type Context } from './context';

/** A connector argument: its id, a unique id prefix or its name (docs/cli.md, "Naming things"). */
const connector = (ctx: Context, ref: string) => resolveId(ctx.api, 'connector', ref);

export const CONNECTOR_COLUMNS = [col('ID', 'id'), col('NAME', 'name'), col('TYPE', 'type'), col('STATUS', 'status'), col('LAST SYNC', 'lastSync')];

const SPACE_COLUMNS = [
  col('CS OBJECT ID', 'csObjectId'),
  col('ANCHOR', 'anchor'),
  col('TYPE', 'objectType'),
  col('MESH OBJECT', 'meshObjectId'),
  col('PENDING', (i) => (i.pendingExport ? ((i.pendingExport as { operation?: string }).operation ?? 'yes') : '')),
  col('ERROR', (i) => (i.error ? ((i.error as { message?: string }).message ?? i.error) : '')),
  col('DN', 'dn'),
];
/** `--state scheduledDeprovision`: when each deprovisioning is due. */
const SCHEDULED_COLUMNS = [...SPACE_COLUMNS.slice(0, 5), col('DUE ON', 'dueOn'), ...SPACE_COLUMNS.slice(5)];

/** `connectors` (create/read/update/delete, test, assign) and `space` (the connector-space explorer). */
export function registerConnectors(program: Command): void {
  const c = program.command('connectors').alias('connector').description('Connectors: identity sources and targets');
  c.command('ls')
    .description('List connectors')
    .action(
      action(async (ctx) => {
        const res = await ctx.api.get<{ connectors: Record<string, unknown>[]; total: number }>('connectors');
        if (ctx.format === 'table') ctx.print({ items: res.connectors, totalCount: res.total }, CONNECTOR_COLUMNS);
        else ctx.print(res);
      }),
    );
  c.command('show <connector>')
    .description('A connector, secrets masked')
    .action(action(async (ctx, ref) => ctx.print(await ctx.api.get(`connectors/${await connector(ctx, ref)}`))));
  c.command('create')
    .description('Create a connector from a JSON file { name, type, config } (- reads standard input)')
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(action(async (ctx) => ctx.print(await ctx.api.post('connectors', readJsonFile(ctx.opts.file)))));
  c.command('update <connector>')
    .description("Replace a connector's name and config from a JSON file (a secret sent as ******** keeps the stored one)")
    .requiredOption('-f, --file <file>', 'the JSON document')
    .action(
      action(async (ctx, ref) => {
        const id = await connector(ctx, ref);
        // A change that loosens a guard rail (a threshold, a grace, four-eyes) is held for a second Admin: exit 8.
        const res = await ctx.api.put(`connectors/${id}`, readJsonFile(ctx.opts.file));
        return heldOr(ctx, res, () => ctx.print(res));
      }),
    );
  c.command('delete <connector>')
    .description(
      'Delete a connector and its rules. One that holds objects or that a schedule runs is refused (the counts are shown) unless --force; forced deletes over its thresholds wait for a second Admin',
    )
    .option('--force', 'delete even when it holds objects or a schedule runs it: the schedules are disabled, its mesh objects left with no connector deleted')
    .action(
      action(async (ctx, ref) => {
        const id = await connector(ctx, ref);
        const held = await ctx.api.call<{ changeId?: string; status?: string } | undefined>(
          'DELETE',
          `connectors/${id}`,
          undefined,
          ctx.opts.force ? { force: true } : undefined,
        );
        // 202: over its deletes threshold, the delete waits for a second Admin (`config changes approve`).
        return heldOr(ctx, held, () => undefined);
      }),
    );
  c.command('test <connector>')
    .description('Test the connection of a stored connector (exit code 9 when the test fails)')
    .action(
      action(async (ctx, ref) => {
        const result = (await ctx.api.post(`connectors/${await connector(ctx, ref)}/test`)) as { ok?: unknown };
        ctx.print(result);
        return result.ok === true ? EXIT.ok : EXIT.checkFailed;
      }),
    );
  c.command('assign <connector> <instanceId>')
    .description('Assign a connector to an engine instance')
    .action(action(async (ctx, ref, instanceId) => ctx.print(await ctx.api.put(`connectors/${await connector(ctx, ref)}/instance`, { instanceId }))));
  c.command('unassign <connector>')
    .description('Unassign a connector from its instance')
    .action(action(async (ctx, ref) => void (await ctx.api.delete(`connectors/${await connector(ctx, ref)}/instance`))));

  const s = program.command('space').description("A connector's space: what it imported and what waits for export");
  paged(
    s
      .command('ls <connector>')
      .description('List connector-space objects, ordered by anchor')
      .option(
        '--state <state>',
        'joined, disconnector, pendingExport (what the next export would send), awaitingConfirmation, error or scheduledDeprovision (deprovisionings waiting for their grace)',
      )
      .option('--type <objectType>', 'object type')
      .option('--search <text>', 'substring of the anchor or DN'),
  ).action(
    action(async (ctx, ref) => {
      const id = await connector(ctx, ref);
      const { state, type, search, skip, take } = ctx.opts;
      const columns = state === 'scheduledDeprovision' ? SCHEDULED_COLUMNS : SPACE_COLUMNS;
      ctx.print(await ctx.api.get(`connectors/${id}/space`, { state, objectType: type, search, skip, take }), columns);
    }),
  );
  s.command('show <connector> <csObjectId>')
    .description('One object: its attributes, pending change and exported values')
    .action(action(async (ctx, ref, cs) => ctx.print(await ctx.api.get(`connectors/${await connector(ctx, ref)}/space/${cs}`))));
  s.command('retry <connector> <csObjectId>')
    .description("Reset an object's export failure so the next export tries again")
    .action(action(async (ctx, ref, cs) => ctx.print(await ctx.api.post(`connectors/${await connector(ctx, ref)}/space/${cs}/retry`))));
  s.command('preview <connector> <csObjectId>')
    .description('What a sync of this one object would do now (writes nothing)')
    .action(action(async (ctx, ref, cs) => ctx.print(await ctx.api.post(`connectors/${await connector(ctx, ref)}/space/${cs}/preview`))));
  s.command('sync <connector> <csObjectId>')
    .description("Sync this one object now (mesh and targets' staging)")
    .action(action(async (ctx, ref, cs) => ctx.print(await ctx.api.post(`connectors/${await connector(ctx, ref)}/space/${cs}/sync`))));
}
