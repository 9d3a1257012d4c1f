import type { Command } from 'commander';
import { col, wideCol } from '../output';
import { resolveOptional } from '../resolve';
import { action, paged } from './context';

/** The leaver columns: the person, the target by name (its id with `-o wide`), the clock's times. */
export const leaverColumns = [
  col('PERSON', 'displayName'),
  col('TARGET', (l) => l.connectorName ?? l.connectorId),
  wideCol('TARGET ID', 'connectorId'),
  col('OPERATION', 'operation'),
  col('STATE', 'state'),
  col('SEEN', 'seenOn'),
  col('DEADLINE', 'deadlineOn'),
  col('SENT', 'sentOn'),
  col('CONFIRMED', 'confirmedOn'),
  col('SECONDS', 'seconds'),
  wideCol('MESH OBJECT ID', 'meshObjectId'),
];

/** `leavers ls`: the leaver clock (GET /leavers), newest first. */
export function registerLeavers(program: Command): void {
  const l = program.command('leavers').description('The leaver clock: deprovisionings seen, sent and confirmed per target');
  paged(
    l
      .command('ls')
      .description('Leavers, newest first (late: past the target\u2019s deadline and not confirmed)')
      .option('--state <state>', 'pending, late or done')
      .option('--connector <connector>', 'leavers of one target connector (id, id prefix or name)')
      .option('--from <time>', 'seen at or after this ISO 8601 time')
      .option('--to <time>', 'seen before this ISO 8601 time'),
  ).action(
    action(async (ctx) => {
      const { state, from, to, skip, take } = ctx.opts;
      const connectorId = await resolveOptional(ctx.api, 'connector', ctx.opts.connector);
      ctx.print(await ctx.api.get('leavers', { state, connectorId, from, to, skip, take }), leaverColumns);
    }),
  );
}
