import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Api, type GlobalOptions } from '../api';
import { CliError, EXIT, type ExitCode } from '../exitCodes';
import { print, writeOut, type Column, type OutputFormat } from '../output';

/** What a command's action gets: the API (signed in as the profile says), its options, and output. */
export interface Context {
  api: Api;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  opts: GlobalOptions & Record<string, any>;
  /** `table` also for `-o wide` (which only adds columns): see {@link Context.wide}. */
  format: OutputFormat;
  /** `-o wide`: tables add the id columns beside the names. */
  wide: boolean;
  print(data: unknown, columns?: Column[]): void;
}

type Handler = (ctx: Context, ...args: string[]) => Promise<ExitCode | void>;

/** The exit code the program ends with (set by the last action). */
export const outcome = { code: EXIT.ok as ExitCode };

/**
 * Wrap a command's handler: commander passes the positional arguments, then the options and the command;
 * the handler gets a {@link Context} and the positional arguments, and may return an exit code.
 */
export function action(handler: Handler) {
  return async (...args: unknown[]): Promise<void> => {
    const command = args[args.length - 1] as Command;
    const positional = args.slice(0, -2).map((a) => a as string);
    const opts = command.optsWithGlobals() as Context['opts'];
    const wide = opts.output === 'wide';
    const format = (wide ? 'table' : (opts.output ?? 'table')) as OutputFormat;
    const api = await Api.connect(opts);
    const code = await handler({ api, opts, format, wide, print: (data, columns) => print(data, wide ? 'wide' : format, columns) }, ...positional);
    outcome.code = code ?? EXIT.ok;
  };
}

/** A JSON document from a file, or from standard input when the path is `-`. */
export function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read ${file}: ${(err as Error).message}`, EXIT.usage);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`${file} is not valid JSON: ${(err as Error).message}`, EXIT.usage);
  }
}

/** A paging option pair on a list command. */
export function paged(cmd: Command): Command {
  return cmd.option('--skip <n>', 'items to skip', toInt).option('--take <n>', 'items per page (the service caps it)', toInt);
}

export function toInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new CliError(`'${value}' is not a whole number.`, EXIT.usage);
  return n;
}

/** A held configuration change as the service answers 202 (a guard rail loosened, a forced delete over its threshold). */
export interface HeldChange {
  changeId: string;
  status: 'AwaitingApproval';
  expiresOn?: string;
}

export function isHeldChange(body: unknown): body is HeldChange {
  return !!body && typeof body === 'object' && typeof (body as HeldChange).changeId === 'string' && (body as HeldChange).status === 'AwaitingApproval';
}

/**
 * A write the service may hold for a second Admin: a held change is printed with how to decide it, and the
 * command exits 8 (it awaits approval), as a run that waits for approval does.
 */
export function heldOr(ctx: Context, body: unknown, done: () => ExitCode | void): ExitCode | void {
  if (!isHeldChange(body)) return done();
  ctx.print(body);
  if (ctx.format === 'table')
    writeOut(
      `held for a second Admin: meshsync config changes approve ${body.changeId} (another Admin), or reject it${body.expiresOn ? `; it expires ${body.expiresOn}` : ''}\n`,
    );
  return EXIT.awaitingApproval;
}
