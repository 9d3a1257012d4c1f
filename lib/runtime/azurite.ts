import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { tightenTree, withPrivateUmask } from './privateDir';
import { STATS_FILE } from './tablePersistence/stats';

/** The well-known Azurite development account (public; documented by Microsoft). */
export const DEV_ACCOUNT = 'devstoreaccount1';
export const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface AzuriteEndpoints {
  tablePort: number;
  queuePort: number;
  blobPort: number;
  host: string;
}

export type AzuriteService = 'table' | 'queue' | 'blob';

export function connectionStringFor(e: AzuriteEndpoints): string {
  return [
    'DefaultEndpointsProtocol=http',
    `AccountName=${DEV_ACCOUNT}`,
    `AccountKey=${DEV_KEY}`,
    `TableEndpoint=http://${e.host}:${e.tablePort}/${DEV_ACCOUNT}`,
    `QueueEndpoint=http://${e.host}:${e.queuePort}/${DEV_ACCOUNT}`,
    `BlobEndpoint=http://${e.host}:${e.blobPort}/${DEV_ACCOUNT}`,
  ].join(';');
}

/** `UseDevelopmentStorage=true` means Azurite on its default ports, as the Azure SDKs read it. */
export function isDevelopmentStorage(connectionString: string): boolean {
  return /^\s*UseDevelopmentStorage\s*=\s*true\s*;?\s*$/i.test(connectionString);
}

export const DEFAULT_ENDPOINTS: AzuriteEndpoints = { host: '127.0.0.1', tablePort: 10002, queuePort: 10001, blobPort: 10000 };

export function portAnswers(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Semi-space size (MB) of the embedded table process's young generation (see {@link Azurite.start}). */
const TABLE_SEMI_SPACE_MB = 64;

export interface AzuriteOptions {
  /** Told in one line when files or folders under `location` were open to other users and got tightened. */
  onTightened?: (line: string) => void;
  /** Folder for disk persistence; omitted: in-memory (tests). */
  location?: string;
  endpoints?: Partial<AzuriteEndpoints>;
  /** The services to run (default: all three). */
  services?: AzuriteService[];
  onLog?: (line: string) => void;
  /** Heap limit of the table process in MB (node --max-old-space-size); omitted: Node's default. */
  maxHeapMB?: number;
  /** With disk persistence: base interval between table saves (default 5000 ms; stretched while saves are slow). */
  tableSaveMs?: number;
  /** With disk persistence: warn when the table heap passes this percent of its limit (default 70). */
  heapWarnPercent?: number;
  /** With disk persistence: warn when the table data on disk passes this many MB (default: none). */
  dataWarnMB?: number;
  /**
   * With disk persistence: tables whose saved file is larger than this many MB load after the table service
   * answers, in the background (a request for one waits for it); 0 or omitted: every table loads first.
   */
  backgroundLoadMB?: number;
  /** How often the table process rewrites its stats file (default 10 s). */
  statsEveryMs?: number;
  /**
   * Run Azurite's own table main (single-file persistence, no stats, no index of ./azuriteTableIndex.ts): only
   * for comparisons (benches, the test that compares every answer with Azurite as shipped).
   */
  stockTable?: boolean;
}

/**
 * The table service's entry: our launcher (streamed persistence, see ./tablePersistence/launcher.ts), compiled
 * beside this file in dist/, or in dist/ when this file runs from its TypeScript source (tests).
 */
export function tableLauncherPath(): string {
  const compiled = path.join(__dirname, 'tablePersistence', 'launcher.js');
  if (existsSync(compiled)) return compiled;
  const fromSource = path.resolve(__dirname, '../../dist/lib/runtime/tablePersistence/launcher.js');
  if (existsSync(fromSource)) return fromSource;
  throw new Error(`The Azurite table launcher is not built (${fromSource}): run \`npm run build\`.`);
}

/** How long a start waits for every service to listen: in memory, and loading a data folder. */
const START_WAIT_MS = 20_000;
const START_WAIT_PERSISTED_MS = 15 * 60_000;

/**
 * Azurite's table, queue and blob services as child processes (each gets a core of its own: Azurite's
 * LokiJS store is CPU-bound). The table service runs through our launcher, which installs the table store's
 * index (./azuriteTableIndex.ts) and, with disk persistence, streams each table to a file of its own (no
 * single-string ceiling) and writes a stats file (`statsFile`); saves come every few seconds; `stop()`
 * signals each service so that it saves before it exits. A SIGKILL of Azurite can lose the last seconds of
 * writes.
 */
export class Azurite {
  private procs: ChildProcess[] = [];
  private readonly services = new Map<ChildProcess, AzuriteService>();
  endpoints!: AzuriteEndpoints;

  constructor(private readonly options: AzuriteOptions = {}) {}

  /** The table process's stats file (disk persistence only). */
  get statsFile(): string | undefined {
    return this.options.location ? path.join(this.options.location, STATS_FILE) : undefined;
  }

  get connectionString(): string {
    return connectionStringFor(this.endpoints);
  }

  async start(): Promise<void> {
    const host = this.options.endpoints?.host ?? '127.0.0.1';
    const tablePort = this.options.endpoints?.tablePort ?? (await freePort(host));
    const queuePort = this.options.endpoints?.queuePort ?? (await freePort(host));
    const blobPort = this.options.endpoints?.blobPort ?? (await freePort(host));
    this.endpoints = { host, tablePort, queuePort, blobPort };
    const bin = path.dirname(require.resolve('azurite/package.json'));
    const common = ['--silent', '--skipApiVersionCheck', '--loose', '--disableProductStyleUrl', '--disableTelemetry'];
    const location = this.options.location;
    if (location) {
      // Its files hold every identity and connector secret (sealed): the owner's alone (docs/operations.md).
      mkdirSync(location, { recursive: true, mode: 0o700 });
      const tightened = tightenTree(location);
      if (tightened) this.options.onTightened?.(`Tightened ${tightened} file(s) and folder(s) under ${location} to the owner only (0600/0700).`);
    }
    const persistence = location ? ['--location', location] : ['--inMemoryPersistence'];
    const services = this.options.services ?? ['table', 'queue', 'blob'];
    const all: Record<AzuriteService, [string, string[], number]> = {
      table: [
        this.options.stockTable ? path.join(bin, 'dist/src/table/main.js') : tableLauncherPath(),
        ['--tableHost', host, '--tablePort', String(tablePort)],
        tablePort,
      ],
      queue: [path.join(bin, 'dist/src/queue/main.js'), ['--queueHost', host, '--queuePort', String(queuePort)], queuePort],
      blob: [path.join(bin, 'dist/src/blob/main.js'), ['--blobHost', host, '--blobPort', String(blobPort)], blobPort],
    };
    if (location && services.includes('table') && !this.options.stockTable) rmSync(path.join(location, STATS_FILE), { force: true });
    const o = this.options;
    const tableEnv: NodeJS.ProcessEnv = {
      ...process.env,
      AZURITE_TABLE_SAVE_MS: o.tableSaveMs ? String(o.tableSaveMs) : undefined,
      AZURITE_TABLE_HEAP_WARN_PERCENT: o.heapWarnPercent ? String(o.heapWarnPercent) : undefined,
      AZURITE_TABLE_DATA_WARN_BYTES: o.dataWarnMB ? String(Math.round(o.dataWarnMB * 1024 * 1024)) : undefined,
      AZURITE_TABLE_STATS_MS: o.statsEveryMs ? String(o.statsEveryMs) : undefined,
      AZURITE_TABLE_DEFER_BYTES: o.backgroundLoadMB ? String(Math.round(o.backgroundLoadMB * 1024 * 1024)) : '0',
    };
    const specs = services.map((s) => [s, ...all[s]] as const);
    for (const [service, script, args] of specs) {
      const table = service === 'table';
      const heap = table && o.maxHeapMB ? [`--max-old-space-size=${Math.round(o.maxHeapMB)}`] : [];
      // The table process's young generation: its load keeps nearly everything it parses; at a million
      // identities, with 64 MB semi-spaces (V8's default 16) in it and in the service, it loaded its tables in
      // 193 s instead of 281 (BENCHMARKS.md, "Start-up at a million"). Being on the command line, this flag
      // overrides one in NODE_OPTIONS.
      if (table && !this.options.stockTable) heap.push(`--max-semi-space-size=${TABLE_SEMI_SPACE_MB}`);
      const child = withPrivateUmask(() =>
        spawn(process.execPath, [...heap, script, ...args, ...persistence, ...common], {
          stdio: ['ignore', 'pipe', 'pipe'],
          cwd: location ?? process.cwd(),
          env: table ? tableEnv : process.env,
        }),
      );
      this.services.set(child, service);
      child.stdout?.on('data', (d: Buffer) => this.options.onLog?.(d.toString().trimEnd()));
      child.stderr?.on('data', (d: Buffer) => this.options.onLog?.(d.toString().trimEnd()));
      this.procs.push(child);
    }
    // A service loads its data before it listens: with disk persistence, a large data folder takes minutes
    // (a million identities: about a minute), so the wait is long there; a process that exits ends it at once.
    const waitMs = location ? START_WAIT_PERSISTED_MS : START_WAIT_MS;
    const deadline = Date.now() + waitMs;
    for (const [, , , port] of specs) {
      while (!(await portAnswers(host, port))) {
        if (Date.now() > deadline) {
          await this.stop();
          throw new Error(`Azurite did not start listening on ${host}:${port} within ${waitMs / 1000} s.`);
        }
        if (this.procs.some((p) => p.exitCode !== null)) {
          await this.stop();
          throw new Error(`Azurite exited during start (port ${port} in use?).`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  get pids(): number[] {
    return this.procs.map((p) => p.pid).filter((p): p is number => typeof p === 'number');
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            // The table service may have a large save to finish (BENCHMARKS.md, "Embedded storage").
            const timer = setTimeout(() => p.kill('SIGKILL'), this.services.get(p) === 'table' ? 300_000 : 10_000);
            p.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            // Our table launcher saves on SIGTERM; Azurite's own mains save on SIGINT only (SIGTERM ends them unsaved).
            p.kill(this.services.get(p) === 'table' && !this.options.stockTable ? 'SIGTERM' : 'SIGINT');
          }),
      ),
    );
    this.procs = [];
    this.services.clear();
  }
}
