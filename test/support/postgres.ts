import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { placeOnce } from './placeOnce';
import { selfSignedLocalhost } from './certificates';
import { onFreePorts } from './ports';
import { pidFile, trackPid } from './processes';

const run = promisify(execFile);

/**
 * A private, throwaway PostgreSQL cluster for the tests: a copy of the test run's initdb template in a mktemp
 * directory, postgres on a free 127.0.0.1 port with its socket in that directory, the superuser's password set
 * over that socket before the fixture is returned, fsync/synchronous_commit/full_page_writes off. TCP
 * connections need the superuser's password (scram-sha-256), so a wrong password really fails. initdb and
 * postgres refuse to run as root: as root they run as the `postgres` system user through runuser.
 */
export interface Postgres {
  dir: string;
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  pid: number;
  /** Run SQL as the superuser in `database` (default: the fixture's database). */
  query<T extends Record<string, unknown> = Record<string, unknown>>(text: string, values?: unknown[], database?: string): Promise<T[]>;
  /** Create an empty database; returns its name. */
  createDatabase(name: string): Promise<string>;
  /** Stop the server at once (pg_ctl stop -m immediate): the "server gone mid-run" case. */
  kill(): Promise<void>;
  /** Start it again after `kill` (same port and data). */
  start(): Promise<void>;
  /** Stop and remove everything. Idempotent. */
  stop(): Promise<void>;
  /** With `tls`: the server's self-signed certificate (PEM), the CA a client must trust. */
  caCertificate?: string;
}

function pgBin(): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b));
  return path.join('/usr/lib/postgresql', versions[versions.length - 1], 'bin');
}

/** Where the clusters of this test run are copied from (removed by globalTeardown, {@link removeClusterTemplates}). */
function templateDir(bin: string): string {
  return path.join(os.tmpdir(), `pg-template-${path.basename(pidFile())}-${path.basename(path.dirname(bin))}`);
}

/**
 * The cluster template of this test run: initdb (about 1 s, most of a fixture's start) runs once, each fixture
 * copies the result (0.2 s). Made by the first fixture that needs it, in a directory of its own renamed into
 * place, so fixtures of other workers starting at the same moment each use a complete template. Its superuser
 * password is random and never used: each fixture sets its own before any TCP connection.
 */
async function clusterTemplate(bin: string, asRoot: boolean): Promise<string> {
  const template = templateDir(bin);
  if (existsSync(path.join(template, 'PG_VERSION'))) return template;
  const staging = mkdtempSync(path.join(os.tmpdir(), 'pg-template-staging-'));
  try {
    let owner: [number, number] | undefined;
    if (asRoot) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const { stdout: gid } = await run('id', ['-g', 'postgres']);
      owner = [Number(stdout.trim()), Number(gid.trim())];
      chownSync(staging, ...owner);
    }
    const pwfile = path.join(staging, 'pw');
    writeFileSync(pwfile, 'template-' + Math.random().toString(36).slice(2) + '\n', { mode: 0o600 });
    if (owner) chownSync(pwfile, ...owner);
    const data = path.join(staging, 'data');
    const initdbArgs = [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      `--pwfile=${pwfile}`,
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ];
    await (asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, 'initdb'), ...initdbArgs]) : run(path.join(bin, 'initdb'), initdbArgs));
    placeOnce(data, template, 'PG_VERSION');
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return template;
}

/** Remove this test run's cluster templates (globalTeardown). */
export function removeClusterTemplates(): void {
  const prefix = `pg-template-${path.basename(pidFile())}-`;
  for (const name of readdirSync(os.tmpdir())) if (name.startsWith(prefix)) rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true });
}

/**
 * `tls`: the server has a self-signed certificate for localhost / 127.0.0.1 (`caCertificate`) and accepts TCP
 * connections only over TLS (pg_hba `hostssl`).
 */
export async function startPostgres(options: { password?: string; tls?: boolean } = {}): Promise<Postgres> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pg-fixture-'));
  const password = options.password ?? 'fixture-' + Math.random().toString(36).slice(2);
  const bin = pgBin();
  const asRoot = process.getuid?.() === 0;
  const as = (cmd: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', cmd, ...args]) : run(cmd, args));
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = path.join(dir, 'data');
  // A copy of the run's cluster template (initdb once), the superuser's password set once it runs.
  await as('cp', ['-a', await clusterTemplate(bin, asRoot), data]);
  let caCertificate: string | undefined;
  let tlsArgs = '';
  if (options.tls) {
    const cert = path.join(dir, 'server.crt');
    const key = path.join(dir, 'server.key');
    await selfSignedLocalhost(key, cert);
    if (asRoot) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const { stdout: gid } = await run('id', ['-g', 'postgres']);
      for (const f of [cert, key]) chownSync(f, Number(stdout.trim()), Number(gid.trim()));
    }
    chmodSync(key, 0o600);
    caCertificate = readFileSync(cert, 'utf8');
    tlsArgs = ` -c ssl=on -c ssl_cert_file=${cert} -c ssl_key_file=${key}`;
    // TCP only over TLS.
    const hba = path.join(data, 'pg_hba.conf');
    writeFileSync(hba, readFileSync(hba, 'utf8').replace(/^host(\s)/gm, 'hostssl$1'));
  }
  let port = 0;
  let pid = 0;
  const start = async () => {
    await as(path.join(bin, 'pg_ctl'), [
      '-D',
      data,
      '-l',
      path.join(dir, 'postgres.log'),
      '-w',
      '-t',
      '30',
      'start',
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=50${tlsArgs}`,
    ]);
    pid = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    trackPid(pid);
  };
  // The port is picked just before postgres binds it, and again on a new one if another process took it meanwhile.
  await onFreePorts(1, async ([candidate]) => {
    port = candidate;
    await start();
  });
  // Over the socket (local connections are trusted): TCP connections need this password from now on.
  try {
    const admin = new Client({ host: dir, port, user: 'postgres', database: 'postgres' });
    await admin.connect();
    try {
      await admin.query(`ALTER ROLE postgres PASSWORD ${admin.escapeLiteral(password)}`);
    } finally {
      await admin.end();
    }
  } catch (err) {
    await as(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  let stopped = false;
  const pg: Postgres = {
    dir,
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password,
    database: 'postgres',
    get pid() {
      return pid;
    },
    caCertificate,
    async query<T extends Record<string, unknown>>(text: string, values: unknown[] = [], database = 'postgres'): Promise<T[]> {
      const client = new Client({ host: '127.0.0.1', port, user: 'postgres', password, database, ...(caCertificate ? { ssl: { ca: caCertificate } } : {}) });
      await client.connect();
      try {
        return (await client.query(text, values)).rows as T[];
      } finally {
        await client.end();
      }
    },
    async createDatabase(name: string): Promise<string> {
      await pg.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      return name;
    },
    async kill(): Promise<void> {
      await as(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    },
    start,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      await pg.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return pg;
}
