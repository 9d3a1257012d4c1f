import type { Command } from 'commander';
import { CliError, EXIT } from '../exitCodes';
import { col, wideCol } from '../output';
import { resolveId } from '../resolve';
import type { Run } from '../wait';
import { action, paged } from './context';
import { finish } from './runs';

/** The orphan columns: the account, why it is an orphan, its state in the target, why a sweep leaves it. */
export const orphanColumns = [
  col('NAME', 'displayName'),
  col('REASON', 'reason'),
  col('STATE', 'targetState'),
  col('SINCE', 'since'),
  col('EXCLUDED', (o) => (o.excluded as { reason?: string } | null)?.reason ?? ''),
  col('DN', (o) => o.dn ?? o.anchor),
  wideCol('CS OBJECT ID', 'csObjectId'),
  wideCol('MESH OBJECT ID', 'meshObjectId'),
];

/** `orphans ls|sweep|keep|unkeep`: a target's accounts joined to no active identity (docs/orphans.md). */
export function registerOrphans(program: Command): void {
  const o = program.command('orphans').description("A target's orphans: accounts joined to no active identity, and the sweep that disables them");
  paged(
    o
      .command('ls <connector>')
      .description('The orphans of a target connector (excluded ones too, with why)')
      .option('--reason <reason>', 'disconnector, tombstone, overdue or gone')
      .option('--excluded', 'only the excluded ones (explicit disconnectors, keep marks)')
      .option('--sweepable', 'only those not excluded'),
  ).action(
    action(async (ctx, ref) => {
      if (ctx.opts.excluded && ctx.opts.sweepable) throw new CliError('--excluded and --sweepable exclude each other.', EXIT.usage);
      const { reason, skip, take } = ctx.opts;
      const excluded = ctx.opts.excluded ? 'true' : ctx.opts.sweepable ? 'false' : undefined;
      const id = await resolveId(ctx.api, 'connector', ref);
      ctx.print(await ctx.api.get(`connectors/${id}/orphans`, { reason, excluded, skip, take }), orphanColumns);
    }),
  );
  o.command('sweep <connector>')
    .description('Start an orphan sweep run (runType OrphanSweep): thresholds, approval and plans apply as to any run')
    .option('--dry-run', 'plan only: nothing is written to the target; the run is a plan that can be applied')
    .option('-w, --wait', 'follow the run to its end (live progress); exit code by its status')
    .action(
      action(async (ctx, ref) => {
        const id = await resolveId(ctx.api, 'connector', ref);
        return finish(ctx, await ctx.api.post<Run>(`connectors/${id}/export`, { runType: 'OrphanSweep', ...(ctx.opts.dryRun ? { dryRun: true } : {}) }));
      }),
    );
  o.command('keep <connector> <csObjectId>')
    .description('Mark an account to keep: listed as excluded, never swept')
    .option('--note <text>', 'why it is kept')
    .action(
      action(async (ctx, ref, cs) =>
        ctx.print(
          await ctx.api.put(`connectors/${await resolveId(ctx.api, 'connector', ref)}/orphans/${cs}/keep`, ctx.opts.note ? { note: ctx.opts.note } : {}),
        ),
      ),
    );
  o.command('unkeep <connector> <csObjectId>')
    .description("Remove an account's keep mark")
    .action(
      action(async (ctx, ref, cs) => {
        await ctx.api.delete(`connectors/${await resolveId(ctx.api, 'connector', ref)}/orphans/${cs}/keep`);
      }),
    );
}
