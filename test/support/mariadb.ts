import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createConnection } from 'mysql2/promise';
import { onFreePorts } from './ports';
import { trackPid } from './processes';

const run = promisify(execFile);

/**
 * A private, throwaway MariaDB server for the tests: mariadb-install-db into a mktemp directory, mariadbd
 * --no-defaults (no /etc/mysql) on a free 127.0.0.1 port, its socket in that directory, durability off. root
 * logs in over the socket only; `test` (password from the options) has all privileges over TCP.
 */
export interface MariaDb {
  dir: string;
  host: string;
  port: number;
  user: string;
  password: string;
  /** An empty database made at start (`fixture`). */
  database: string;
  pid: number;
  /** Run one statement as `test` in `database` (default: the fixture's). */
  query<T = Record<string, unknown>>(text: string, values?: unknown[], database?: string): Promise<T[]>;
  createDatabase(name: string): Promise<string>;
  /** Kill the server (SIGKILL): the "server gone mid-run" case. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export async function startMariaDb(options: { password?: string } = {}): Promise<MariaDb> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mariadb-fixture-'));
  const password = options.password ?? 'fixture-' + Math.random().toString(36).slice(2);
  const user = os.userInfo().username;
  const data = path.join(dir, 'data');
  const sock = path.join(dir, 'mysql.sock');
  await run('mariadb-install-db', ['--no-defaults', `--user=${user}`, `--datadir=${data}`, '--auth-root-authentication-method=socket', '--skip-test-db'], {
    maxBuffer: 1 << 24,
  });
  const cli = (sql: string) => run('mariadb', ['--no-defaults', '-S', sock, '-uroot', '-e', sql]);
  // The port is picked just before mariadbd binds it, and again on a new one if another process took it meanwhile.
  const { port, child } = await onFreePorts(1, async ([candidate]) => {
    const server: ChildProcess = spawn(
      'mariadbd',
      [
        '--no-defaults',
        `--user=${user}`,
        `--datadir=${data}`,
        `--socket=${sock}`,
        `--pid-file=${path.join(dir, 'mariadbd.pid')}`,
        `--port=${candidate}`,
        '--bind-address=127.0.0.1',
        `--log-error=${path.join(dir, 'error.log')}`,
        '--skip-log-bin',
        '--innodb-buffer-pool-size=64M',
        '--innodb-flush-log-at-trx-commit=0',
        '--innodb-doublewrite=0',
        '--skip-name-resolve',
      ],
      { stdio: 'ignore' },
    );
    trackPid(server.pid);
    for (let i = 0; ; i++) {
      if (server.exitCode !== null || server.signalCode !== null) throw new Error(`mariadbd exited at start; see ${path.join(dir, 'error.log')}`);
      try {
        await run('mariadb-admin', ['--no-defaults', '-S', sock, '-uroot', 'ping']);
        return { port: candidate, child: server };
      } catch {
        if (i > 600) {
          server.kill('SIGKILL');
          throw new Error('mariadbd did not start in 30 s');
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  });
  let exited = child.exitCode !== null;
  child.on('exit', () => (exited = true));
  const quoted = password.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
  await cli(
    `CREATE USER 'test'@'127.0.0.1' IDENTIFIED BY '${quoted}'; GRANT ALL ON *.* TO 'test'@'127.0.0.1'; CREATE DATABASE fixture CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;`,
  );
  let stopped = false;
  const db: MariaDb = {
    dir,
    host: '127.0.0.1',
    port,
    user: 'test',
    password,
    database: 'fixture',
    pid: child.pid ?? 0,
    async query<T>(text: string, values: unknown[] = [], database = 'fixture'): Promise<T[]> {
      const conn = await createConnection({ host: '127.0.0.1', port, user: 'test', password, database, timezone: 'Z', multipleStatements: true });
      try {
        const [rows] = await conn.query(text, values);
        return (Array.isArray(rows) ? rows : []) as T[];
      } finally {
        await conn.end();
      }
    },
    async createDatabase(name: string): Promise<string> {
      await cli(`CREATE DATABASE \`${name.replace(/`/g, '``')}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      return name;
    },
    async kill(): Promise<void> {
      if (exited) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    },
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      await db.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return db;
}
