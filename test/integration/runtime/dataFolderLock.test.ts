import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRuntime, type RuntimeProcess } from './runtimeProcess';

/**
 * One runtime process per data folder: two real processes on one folder. The second is refused, naming the
 * folder and the pid holding it; after the holder dies by kill -9 (its lock file left behind), a new start
 * takes the stale lock over.
 */
describe('runtime: one process per data folder', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fnhost-lock-'));
  const lockFile = path.join(dataDir, 'runtime', 'host.lock');
  const started: RuntimeProcess[] = [];

  afterAll(async () => {
    for (const rt of started) await rt.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses a second process on the same folder (exit 1, naming the folder and the holding pid), takes over after kill -9', async () => {
    const first = await startRuntime({ dataDir });
    started.push(first);
    const instanceId = readFileSync(path.join(dataDir, 'runtime', 'instance-id'), 'utf8').trim();
    expect(JSON.parse(readFileSync(lockFile, 'utf8'))).toMatchObject({ pid: first.proc.pid, hostname: os.hostname() });

    const second = await startRuntime({ dataDir, waitForStart: false });
    started.push(second);
    const { code } = await second.exited;
    expect(code).toBe(1);
    expect(second.stderr()).toContain(`The data folder ${dataDir} is in use by another runtime process (pid ${first.proc.pid} on ${os.hostname()}`);
    expect(second.stdout()).not.toContain('Host started');
    // The first one is untouched: still serving, still holding the lock.
    expect((await fetch(`${first.baseUrl}/api/hello`)).status).toBe(200);
    expect(JSON.parse(readFileSync(lockFile, 'utf8')).pid).toBe(first.proc.pid);

    await first.stop('SIGKILL');
    expect(existsSync(lockFile)).toBe(true); // nothing ran on the way out: the lock is stale

    const third = await startRuntime({ dataDir });
    started.push(third);
    expect(third.stdout()).toContain(`Took over the lock of the data folder ${dataDir} from pid ${first.proc.pid}`);
    expect(JSON.parse(readFileSync(lockFile, 'utf8')).pid).toBe(third.proc.pid);
    expect(readFileSync(path.join(dataDir, 'runtime', 'instance-id'), 'utf8').trim()).toBe(instanceId);

    // A graceful stop gives the folder back.
    expect((await third.stop('SIGTERM')).code).toBe(0);
    expect(existsSync(lockFile)).toBe(false);
  }, 120_000);

  it('lets exactly one of two processes started together take a stale lock', async () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'fnhost-lock-race-'));
    try {
      // A lock left by a process that has exited (and been reaped).
      const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
      mkdirSync(path.join(folder, 'runtime'), { recursive: true });
      writeFileSync(
        path.join(folder, 'runtime', 'host.lock'),
        JSON.stringify({ pid: Number(dead.stdout), hostname: os.hostname(), startedAt: '2020-01-01T00:00:00.000Z' }),
      );
      const both = await Promise.all([startRuntime({ dataDir: folder, waitForStart: false }), startRuntime({ dataDir: folder, waitForStart: false })]);
      started.push(...both);
      const outcome = await Promise.all(
        both.map((rt) => Promise.race([rt.waitFor(/Host started/).then(() => 'started'), rt.exited.then(({ code }) => `exited ${code}`)])),
      );
      expect([...outcome].sort()).toEqual(['exited 1', 'started']);
      // Either may have removed the stale lock; the one that then created the lock runs.
      const [winner, loser] = outcome[0] === 'started' ? both : [both[1], both[0]];
      expect(loser.stderr()).toContain(`The data folder ${folder} is in use by another runtime process (pid ${winner.proc.pid} `);
      await winner.stop();
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 120_000);
});
