import { spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../../lib/runtime/azurite';
import { trackPid } from '../../support/processes';
import { CLI, SAMPLE_APP, startRuntime } from './runtimeProcess';

/**
 * `npm start` warns in one line when the process runs as root. scripts/start.js only builds when dist/ is
 * stale and then runs the runtime CLI's main in its own process, so the test starts the CLI (a rebuild from
 * inside a test would race other builds of dist/). As root, the test also starts it as `nobody` (uid 65534)
 * and sees no warning.
 */
const WARNING = 'Running as root: the service and its connectors can read and write every file of this machine. Run it as an unprivileged user';
const isRoot = process.getuid?.() === 0;

/** Start the CLI as another user and resolve with its output once it has started (or exited). */
async function outputAsUser(uid: number, gid: number): Promise<string> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fnhost-uid-'));
  chownSync(dataDir, uid, gid);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, AzureWebJobsStorage: process.env.TEST_STORAGE_CONNECTION_STRING, HOME: dataDir };
  delete env.WEBSITE_INSTANCE_ID;
  const child = spawn(process.execPath, [CLI, 'start', '--app', SAMPLE_APP, '--port', String(port), '--data-dir', dataDir], {
    env,
    uid,
    gid,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackPid(child.pid);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    const deadline = Date.now() + 30_000;
    while (!out.includes('Host started') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (!out.includes('Host started')) throw new Error(`the runtime did not start as uid ${uid}:\n${out}`);
    return out;
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('npm start warns when it runs as root', () => {
  it(`${isRoot ? 'warns as root (this test runs as root), not as nobody' : 'does not warn (this test does not run as root)'}`, async () => {
    const rt = await startRuntime();
    try {
      const warnings = rt
        .stdout()
        .split('\n')
        .filter((line) => line.includes('Running as root'));
      expect(warnings).toHaveLength(isRoot ? 1 : 0);
      if (isRoot) expect(warnings[0]).toContain(WARNING);
    } finally {
      await rt.stop();
    }
    // Root can start it as an unprivileged user (nobody) too: no warning then.
    if (isRoot) expect(await outputAsUser(65534, 65534)).not.toContain('Running as root');
  });
});
