import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

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

/**
 * The table service's entry point: our launcher (lib/runtime/azuriteTable.ts, compiled), which installs the
 * table store's index before Azurite starts. From the TypeScript sources (tests), the compiled launcher in
 * dist/; Azurite's own entry point only if neither exists.
 */
function tableEntry(azuriteRoot: string): string {
  for (const f of [path.join(__dirname, 'azuriteTable.js'), path.resolve(__dirname, '../../dist/lib/runtime/azuriteTable.js')]) if (existsSync(f)) return f;
  return path.join(azuriteRoot, 'dist/src/table/main.js');
}

export interface AzuriteOptions {
  /** Folder for disk persistence; omitted: in-memory (tests). */
  location?: string;
  endpoints?: Partial<AzuriteEndpoints>;
  /** The services to run (default: all three). */
  services?: AzuriteService[];
  onLog?: (line: string) => void;
  /** Azurite's table store as shipped, without the index of lib/runtime/azuriteTableIndex.ts (comparisons). */
  stockTableStore?: boolean;
}

/**
 * Azurite's table, queue and blob services as child processes (each gets a core of its own: Azurite's
 * LokiJS store is CPU-bound). Disk persistence writes every few seconds; `stop()` sends SIGTERM so Azurite
 * saves before it exits. A SIGKILL of Azurite can lose the last seconds of writes.
 */
export class Azurite {
  private procs: ChildProcess[] = [];
  endpoints!: AzuriteEndpoints;

  constructor(private readonly options: AzuriteOptions = {}) {}

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
    if (location) mkdirSync(location, { recursive: true });
    const persistence = location ? ['--location', location] : ['--inMemoryPersistence'];
    const services = this.options.services ?? ['table', 'queue', 'blob'];
    const all: Record<AzuriteService, [string, string[], number]> = {
      table: [
        this.options.stockTableStore ? path.join(bin, 'dist/src/table/main.js') : tableEntry(bin),
        ['--tableHost', host, '--tablePort', String(tablePort)],
        tablePort,
      ],
      queue: [path.join(bin, 'dist/src/queue/main.js'), ['--queueHost', host, '--queuePort', String(queuePort)], queuePort],
      blob: [path.join(bin, 'dist/src/blob/main.js'), ['--blobHost', host, '--blobPort', String(blobPort)], blobPort],
    };
    const specs = services.map((s) => all[s]);
    for (const [script, args] of specs) {
      const child = spawn(process.execPath, [script, ...args, ...persistence, ...common], {
        stdio: ['ignore', 'pipe', 'pipe'],
        cwd: location ?? process.cwd(),
      });
      child.stdout?.on('data', (d: Buffer) => this.options.onLog?.(d.toString().trimEnd()));
      child.stderr?.on('data', (d: Buffer) => this.options.onLog?.(d.toString().trimEnd()));
      this.procs.push(child);
    }
    const deadline = Date.now() + 20_000;
    for (const [, , port] of specs) {
      while (!(await portAnswers(host, port))) {
        if (Date.now() > deadline) {
          await this.stop();
          throw new Error(`Azurite did not start listening on ${host}:${port} within 20 s.`);
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
            const timer = setTimeout(() => p.kill('SIGKILL'), 10_000);
            p.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            p.kill('SIGINT');
          }),
      ),
    );
    this.procs = [];
  }
}
