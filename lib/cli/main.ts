#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { registerAdmin } from './commands/admin';
import { registerCases } from './commands/cases';
import { registerConnectors } from './commands/connectors';
import { outcome } from './commands/context';
import { registerLeavers } from './commands/leavers';
import { registerOrphans } from './commands/orphans';
import { registerLogin } from './commands/login';
import { registerMesh } from './commands/mesh';
import { registerRuns } from './commands/runs';
import { CliError, EXIT } from './exitCodes';
import { writeErr } from './output';

/**
 * `meshsync`: the Admin API from a terminal or a script. Every command is one or a few API calls (nothing
 * the API does not offer), signed in as the profile says. Exit codes: ./exitCodes.ts and docs/cli.md.
 */
export function buildProgram(): Command {
  const program = new Command('meshsync')
    .description('Operate an identity mesh sync service through its Admin API.')
    .version(readVersion(), '-V, --version')
    .option('-p, --profile <name>', 'the profile (default: MESHSYNC_PROFILE, then the current one)')
    .option('--url <url>', 'the API base, e.g. http://127.0.0.1:7071/api (default: MESHSYNC_URL, then the profile)')
    .option('--token <token>', "a Bearer token to use as is (default: MESHSYNC_TOKEN, then the profile's sign-in)")
    .addOption(
      new Option('-o, --output <format>', 'table, wide (a table with the ids beside the names), json or yaml')
        .choices(['table', 'wide', 'json', 'yaml'])
        .default('table'),
    )
    .showHelpAfterError('(meshsync --help lists the commands)')
    .exitOverride();
  registerLogin(program);
  registerConnectors(program);
  registerCases(program);
  registerRuns(program);
  registerMesh(program);
  registerAdmin(program);
  registerLeavers(program);
  registerOrphans(program);
  for (const c of program.commands) {
    c.exitOverride();
    for (const sub of c.commands) sub.exitOverride();
  }
  return program;
}

function readVersion(): string {
  try {
    return (require('../../../package.json') as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

/** Run with `argv`; the exit code (never throws; errors are printed as one line plus the problem's field errors). */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  outcome.code = EXIT.ok;
  try {
    await program.parseAsync(argv);
    return outcome.code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are not errors; anything else commander refused is a usage error (already printed).
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help' ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliError) {
      // A problem's detail can quote identity data: printed without the control sequences it may carry.
      writeErr(`meshsync: ${err.message}\n`);
      for (const line of err.details) writeErr(`${line}\n`);
      return err.exitCode;
    }
    writeErr(`meshsync: ${(err as Error)?.message ?? String(err)}\n`);
    return EXIT.unavailable;
  }
}

if (require.main === module) {
  main(process.argv).then((code) => {
    process.exitCode = code;
  });
}
