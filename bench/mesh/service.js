'use strict';
/**
 * The service for the mesh benchmark, on an Azurite the benchmark owns: bench/support.js's startService starts
 * and stops an Azurite of its own with each service, and this benchmark restarts the service on the same
 * storage (start-up on an imported mesh), under a table prefix, with a preload, and asks for Viewer tokens
 * as well as Admin ones. Candidates for bench/support.js: an existing-Azurite option there would replace this.
 */
const { spawn } = require('node:child_process');
const { readFileSync } = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const { ROOT: root, onInterrupt, rssMB, sleep, stopChild } = require('../support');

/**
 * Spawn the service on `azurite` with table prefix `prefix` and data folder `dataDir` (a restart on the same
 * folder keeps the connectors' delta state), wait until /api/health answers, and return a handle with a
 * token getter, an HTTP helper and stop(). `nodeOptions` goes to the service only (a preload, --expose-gc).
 */
async function startService({ azurite, prefix, dataDir, nodeOptions, env = {} }) {
  const { freePort } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
  const port = await freePort();
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [path.join(root, 'dist/lib/runtime/cli.js'), 'start', '--app', root, '--port', String(port), '--data-dir', dataDir], {
    env: {
      ...process.env,
      ...(nodeOptions ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${nodeOptions}`.trim() } : {}),
      AzureWebJobsStorage: azurite.connectionString,
      Storage__TablePrefix: prefix,
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      Service__DataDir: dataDir,
      Authentication__Negotiate__Enabled: 'false',
      Engine__InstanceName: `bench-${prefix}`,
      LOG_FORMAT: '',
      // The benches' file connectors read temporary folders.
      Connectors__File__Roots: os.tmpdir(),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let logs = '';
  // BENCH_SERVICE_LOG=<file>: everything the service prints also goes to that file (as bench/support.js).
  const logFile = process.env.BENCH_SERVICE_LOG;
  const keep = (d) => {
    logs = (logs + d.toString()).slice(-50000);
    if (logFile) require('node:fs').appendFileSync(logFile, d);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((r) => child.once('exit', r));
  const base = `http://127.0.0.1:${port}/api`;
  const svc = {
    child,
    pid: child.pid,
    base,
    spawnedAt,
    logs: () => logs,
    async stop() {
      removeInterrupt();
      await stopChild(child, exited);
    },
  };
  const removeInterrupt = onInterrupt(() => svc.stop());
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/health`)).status === 200) break;
      } catch {
        // not listening yet
      }
      if (child.exitCode !== null || i > 1200) throw new Error(`service did not start:\n${logs.slice(-4000)}`);
      await sleep(50);
    }
  } catch (err) {
    await svc.stop();
    throw err;
  }
  svc.healthMs = performance.now() - spawnedAt;
  const tokens = new Map();
  /** Authorization headers for `role` (client credentials from the dev issuer, cached). */
  svc.headers = async (role) => {
    if (!tokens.has(role)) {
      const info = JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8'));
      const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(info.clientSecret)}`).toString('base64');
      const r = await fetch(info.tokenEndpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
        body: `grant_type=client_credentials&role=${role}`,
      });
      if (r.status !== 200) throw new Error(`token for ${role}: ${r.status} ${await r.text()}`);
      tokens.set(role, { authorization: `Bearer ${(await r.json()).access_token}`, 'content-type': 'application/json' });
    }
    return tokens.get(role);
  };
  /** One request as `role`; the body parsed. Throws unless the status is `expect` (when given). */
  svc.call = async (role, method, route, body, expect) => {
    const r = await fetch(`${base}/${route}`, { method, headers: await svc.headers(role), body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    const out = { status: r.status, body: text ? JSON.parse(text) : undefined };
    if (expect !== undefined && r.status !== expect) {
      throw new Error(`${method} ${route}: expected ${expect}, got ${r.status}: ${text.slice(0, 2000)}\n${logs.slice(-4000)}`);
    }
    return out;
  };
  return svc;
}

module.exports = { rssMB, startService };
