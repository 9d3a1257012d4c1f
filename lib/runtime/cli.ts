#!/usr/bin/env node
import path from 'node:path';
import { FunctionsHost } from './host';
import { isConfigLikeError } from './settings';

const USAGE = `Usage: fnhost start [--app DIR] [--port N] [--host H] [--data-dir DIR]

Hosts an Azure Functions v4 Node.js app folder (host.json + package.json "main") the way
'func start' does: HTTP functions on http://HOST:PORT/<routePrefix>/<route>, timers, durable functions,
storage queues, blobs and tables. A binding it does not run stops the start (docs/runtime-bindings.md).

Options:
  --app DIR        The app folder (default: the current folder)
  --port N         HTTP port (default: PORT, then local.settings.json Host.LocalHttpPort, then 7071)
  --host H         Bind address (default: HOST, then 127.0.0.1)
  --data-dir DIR   Runtime data: instance id, Azurite files (default: <app>/.data)
  -h, --help       Show this help

Environment: LOG_FORMAT=json for JSON log lines; Runtime__SkipUnsupportedFunctions=true starts without
the functions whose bindings it does not run; local.settings.json Values are loaded where the environment
does not set them.`;

export interface CliArgs {
  command?: string;
  app: string;
  port?: number;
  host?: string;
  dataDir?: string;
  help: boolean;
}

export function parseArgs(argv: string[]): CliArgs {
  const args: CliArgs = { app: process.cwd(), help: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new Error(`${flag} needs a value.`);
      return v;
    };
    switch (flag) {
      case '-h':
      case '--help':
        args.help = true;
        break;
      case '--app':
      case '--script-root':
        args.app = path.resolve(value());
        break;
      case '--port':
      case '-p': {
        const v = value();
        const n = Number(v);
        if (!/^\d+$/.test(v) || n > 65535) throw new Error(`--port must be a port number, not '${v}'.`);
        args.port = n;
        break;
      }
      case '--host':
        args.host = value();
        break;
      case '--data-dir':
        args.dataDir = path.resolve(value());
        break;
      default:
        if (a.startsWith('-')) throw new Error(`Unknown option '${a}'.`);
        if (args.command) throw new Error(`Unexpected argument '${a}'.`);
        args.command = a;
    }
  }
  return args;
}

/**
 * The start-up warning for a process running as root (uid 0), or undefined. As root the service and every
 * connector in it can read and write any file of the machine.
 */
export function rootWarning(uid: number | undefined): string | undefined {
  if (uid !== 0) return undefined;
  return 'Running as root: the service and its connectors can read and write every file of this machine. Run it as an unprivileged user that owns only the app and data folders.';
}

/** Run `fnhost`: start the host, stop it gracefully on SIGINT/SIGTERM; exit 1 when it cannot start. */
export async function main(argv: string[]): Promise<void> {
  let args: CliArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (args.help || !args.command) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(args.help ? 0 : 2);
  }
  if (args.command !== 'start') {
    process.stderr.write(`Unknown command '${args.command}'.\n\n${USAGE}\n`);
    process.exit(2);
  }
  const host = new FunctionsHost({ appDir: args.app, port: args.port, host: args.host, dataDir: args.dataDir });
  const asRoot = rootWarning(process.getuid?.());
  if (asRoot) host.logger.warn('Host.Startup', asRoot);
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    host.logger.info('Host.Startup', `${signal} received: shutting down.`);
    host.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`Error during shutdown: ${(err as Error)?.message ?? String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  try {
    await host.start();
  } catch (err) {
    const text = isConfigLikeError(err) ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
    process.stderr.write(`The host could not start: ${text}\n`);
    await host.stop().catch(() => undefined);
    process.exit(1);
  }
}

if (require.main === module) void main(process.argv.slice(2));
