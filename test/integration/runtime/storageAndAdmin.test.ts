import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_ENDPOINTS, portAnswers } from '../../../lib/runtime/azurite';
import { ROOT, startRuntime } from './runtimeProcess';

const { host, tablePort, queuePort, blobPort } = DEFAULT_ENDPOINTS;

describe('development storage (AzureWebJobsStorage=UseDevelopmentStorage=true)', () => {
  it('starts Azurite on the default ports when none answers, persists under the data dir, and stops it on exit', async () => {
    const busy = (await portAnswers(host, tablePort)) || (await portAnswers(host, queuePort));
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fnhost-devstorage-'));
    const rt = await startRuntime({ dataDir, env: { AzureWebJobsStorage: 'UseDevelopmentStorage=true' } });
    let exit: { code: number | null };
    try {
      const state = (await (await fetch(`${rt.baseUrl}/api/state`)).json()) as { storageIsConnectionString: boolean };
      // The app sees the real connection string, not the UseDevelopmentStorage shorthand.
      expect(state.storageIsConnectionString).toBe(true);
      if (!busy) {
        expect(rt.stdout()).toContain(
          `Started Azurite (table ${host}:${tablePort}, queue ${host}:${queuePort}, blob ${host}:${blobPort}) with data in ${path.join(dataDir, 'azurite')}`,
        );
        expect(await portAnswers(host, tablePort)).toBe(true);
        expect(await portAnswers(host, queuePort)).toBe(true);
        expect(await portAnswers(host, blobPort)).toBe(true);
      } else {
        // Another Azurite already serves the default ports: the runtime must use it and leave it alone.
        expect(rt.stdout()).toContain('Using the Azurite (development storage) already listening');
      }
    } finally {
      exit = await rt.stop();
    }
    expect(exit.code).toBe(0);
    if (!busy) {
      expect(rt.stdout()).toContain('Stopped Azurite.');
      expect(await portAnswers(host, tablePort)).toBe(false);
      expect(await portAnswers(host, queuePort)).toBe(false);
      expect(await portAnswers(host, blobPort)).toBe(false);
      // Azurite saved its table database (the timer status table was written) to the data dir on SIGTERM.
      expect(existsSync(path.join(dataDir, 'azurite'))).toBe(true);
      expect(readdirSync(path.join(dataDir, 'azurite')).some((f) => f.includes('table'))).toBe(true);
    } else {
      expect(rt.stdout()).not.toContain('Stopped Azurite.');
      expect(await portAnswers(host, tablePort)).toBe(true);
    }
  });
});

describe('admin authorization for runtime routes (host.json localRuntime.adminAuthorizationFunction)', () => {
  const appDir = path.join(ROOT, 'test/fixtures/sample-app/admin-app');

  it("asks the app's function: 2xx allows, anything else is sent back as is", async () => {
    const rt = await startRuntime({ args: (port, dataDir) => [path.join(appDir, 'hostWithProbe.js'), String(port), dataDir] });
    try {
      const denied = await fetch(`${rt.baseUrl}/runtime/probe`, { headers: { 'x-admin': 'no' } });
      expect(denied.status).toBe(401);
      expect(denied.headers.get('www-authenticate')).toBe('Bearer');
      expect(await denied.json()).toEqual({ error: 'not an admin' });
      const allowed = await fetch(`${rt.baseUrl}/runtime/probe`, { headers: { 'x-admin': 'yes' } });
      expect(allowed.status).toBe(200);
      expect(await allowed.json()).toEqual({ allowed: true });
      // The authorizer saw the caller's path, through the normal invocation pipeline.
      await rt.waitFor(/adminCheck for \/runtime\/probe/);
      expect(rt.stdout()).toMatch(/Executed 'Functions\.adminCheck' \(Succeeded/);
    } finally {
      expect((await rt.stop()).code).toBe(0);
    }
  });
});
