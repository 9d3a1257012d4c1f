'use strict';
/**
 * What the bench scripts share: command-line numbers, /proc figures of a process, and the running service
 * (local runtime + in-memory Azurite) with an Admin token, the Admin API client and an import-run timer.
 * Plain Node over dist/ (run `npm run build` first).
 */
const { spawn } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');

/**
 * `--name value` from the command line: a number unless the default is a string; `dflt` when absent.
 * @param {string} name
 * @param {number|string|undefined} dflt
 */
/**
 * Options for the benches' Azurite: BENCH_STOCK_AZURITE=1 runs Azurite's table store as shipped, without the
 * runtime's index (lib/runtime/azuriteTableIndex.ts), to compare the two.
 */
function azuriteOptions(extra = {}) {
  return { ...(process.env.BENCH_STOCK_AZURITE === '1' ? { stockTable: true } : {}), ...extra };
}

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || i + 1 >= process.argv.length) return dflt;
  return typeof dflt === 'string' ? process.argv[i + 1] : Number(process.argv[i + 1]);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A memory field of /proc/<pid>/status in MB, or null when /proc does not have it. */
function statusMB(pid, field) {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** Peak resident set (VmHWM) of a process in MB, or null when /proc does not have it. */
const peakRssMB = (pid) => statusMB(pid, 'VmHWM');
/** Resident set now (VmRSS) of a process in MB, or null when /proc does not have it. */
const rssMB = (pid) => statusMB(pid, 'VmRSS');

/** CPU seconds (user + system) a process (or one of its threads) has used so far, from /proc; null when not available. */
function cpuSeconds(pid, tid) {
  try {
    // With a thread id: that thread alone (/proc/<pid>/task/<tid>/stat has the same fields).
    const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return null;
  }
}

/**
 * CPU seconds the hypervisor took from this virtual machine so far (the `steal` column of /proc/stat, summed
 * over all CPUs); null when not available. On a shared host a run with much steal is slower for reasons
 * outside the code: benches report it beside their times.
 */
function stealSeconds() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
    return Number(f[8]) / 100;
  } catch {
    return null;
  }
}

/**
 * SIGTERM a child process and wait for `exited` (its exit promise); SIGKILL after 120 s (a service's stop
 * writes its read model's snapshot: about 12 s at a million objects on a quiet machine).
 */
async function stopChild(child, exited) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 120000);
  await exited;
  clearTimeout(timer);
}

const interruptCleanups = [];
let interruptHooked = false;

/**
 * Runs `fn` (async allowed) if this script is interrupted (Ctrl-C, timeout's SIGTERM) before it removes it, so
 * the servers a bench started do not outlive it. Returns a function that removes it.
 */
function onInterrupt(fn) {
  interruptCleanups.push(fn);
  if (!interruptHooked) {
    interruptHooked = true;
    const handler = () => {
      void Promise.allSettled(
        interruptCleanups
          .splice(0)
          .reverse()
          .map((f) => Promise.resolve().then(f)),
      ).then(() => process.exit(130));
    };
    process.once('SIGINT', handler);
    process.once('SIGTERM', handler);
  }
  return () => {
    const i = interruptCleanups.indexOf(fn);
    if (i >= 0) interruptCleanups.splice(i, 1);
  };
}

/**
 * Starts an in-memory Azurite and the service on it (`cli.js start --app <app> --port <free>`), waits for
 * /api/health, and gets an Admin token from the dev issuer the service writes into its data folder.
 *
 * @param {object} [o]
 * @param {string} [o.root] project root (dist/ lives there); default: this checkout.
 * @param {string} [o.app] the app folder the runtime hosts; default: root.
 * @param {Record<string,string>} [o.env] extra environment for the service, applied last (NODE_OPTIONS too).
 * @param {string} [o.dataDir] the service's data folder; default: a mktemp folder removed by stop().
 * @param {string} [o.azuriteNodeOptions] NODE_OPTIONS for the Azurite processes (e.g. a --require preload).
 * @param {object} [o.azurite] an Azurite already started (lib/runtime/azurite.js `Azurite`, or any object with
 *   `connectionString` and `pids`): the service uses it and `stop()` leaves it running; default: one of its own.
 *   Two services on one Azurite are two engine instances on one storage account (bench/scale/instances.js).
 * @param {string} [o.token] the Bearer token to call it with (a service that trusts another one's development
 *   issuer has none of its own); default: an Admin token from its own development issuer.
 * @param {string} [o.azuriteLocation] Azurite persists to this folder (disk, as `npm start` does under the data
 *   folder's azurite/, with the same limits when the build has them) instead of in memory; stop() sends it
 *   SIGTERM so it saves. A restart on the same folder loads what was saved.
 * @param {(text: string) => void} [o.onOutput] every chunk the service writes to stdout/stderr.
 * @param {number} [o.startTimeoutSeconds] how long to wait for /api/health (default 120).
 * @param {string[]} [o.nodeArgs] node options for the service process (before BENCH_SERVICE_NODE_ARGS).
 * @returns {Promise<{ base: string, pid: number, tablePid: number, azurite: object, dataDir: string, token: string,
 *   startSeconds: number, call: Function, must: Function, runImport: Function, runExport: Function, logs: () => string,
 *   stop: () => Promise<void> }>}
 */
/**
 * A counting HTTP proxy in front of Azurite's table endpoint (bench option `countRequests`): the storage
 * requests the service makes, by kind. `writes` counts HTTP requests that change something (a batch is one),
 * `batchedWrites` the operations inside batches, `reads` the GETs. `take()` returns the counts and resets them.
 */
async function countingProxy(targetPort, freePort) {
  const http = require('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let counts = { reads: 0, writes: 0, batchedWrites: 0, byKind: {} };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      // By kind: the method and the table (a batch's table is its first operation's), e.g. `GET Mesh`, `batch UniqueValues`.
      let kind;
      if (req.method === 'GET') counts.reads++;
      else {
        counts.writes++;
        if (req.url.includes('$batch')) {
          const text = body.toString('latin1');
          counts.batchedWrites += (text.match(/^(PUT|POST|MERGE|PATCH|DELETE) http/gm) ?? []).length;
          kind = `batch ${/^(?:PUT|POST|MERGE|PATCH|DELETE) http[^ ]*?\/([A-Za-z0-9]+)[(? ]/m.exec(text)?.[1] ?? '?'}`;
        }
      }
      if (!kind) kind = `${req.method} ${/^\/[^/]+\/([A-Za-z0-9]+)/.exec(req.url)?.[1] ?? req.url.slice(0, 40)}`;
      counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
      const up = http.request({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers, agent }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  const port = await freePort();
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return {
    port,
    take() {
      const out = counts;
      counts = { reads: 0, writes: 0, batchedWrites: 0, byKind: {} };
      return out;
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

/**
 * The limits `npm start` gives its embedded, disk-persisting Azurite (heap, save interval, warnings), from the
 * build's runtime when it has them (dist/lib/runtime/tablePersistence/embedded.js); {} on a build without.
 */
function embeddedLimits(root, env) {
  try {
    return require(path.join(root, 'dist/lib/runtime/tablePersistence/embedded.js')).embeddedAzuriteLimits(env);
  } catch {
    return {};
  }
}

async function startService(o = {}) {
  const root = o.root ?? ROOT;
  const { Azurite, freePort } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
  const ownDataDir = !o.dataDir;
  const dataDir = o.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'bench-service-'));
  const ownAzurite = !o.azurite;
  const limits = o.azuriteLocation ? embeddedLimits(root, { ...process.env, ...(o.env ?? {}) }) : undefined;
  const azurite = o.azurite ?? new Azurite(azuriteOptions(o.azuriteLocation ? { location: o.azuriteLocation, ...limits } : {}));
  // Azurite spawns its processes with this process's environment: set NODE_OPTIONS just for that.
  const saved = process.env.NODE_OPTIONS;
  if (o.azuriteNodeOptions !== undefined) process.env.NODE_OPTIONS = o.azuriteNodeOptions;
  try {
    if (ownAzurite) await azurite.start();
  } finally {
    if (o.azuriteNodeOptions !== undefined) {
      if (saved === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = saved;
    }
  }
  const proxy = o.countRequests ? await countingProxy(azurite.endpoints.tablePort, freePort) : null;
  const storage = proxy ? azurite.connectionString.replace(/(TableEndpoint=http:\/\/[^:]+:)\d+/, `$1${proxy.port}`) : azurite.connectionString;
  const port = await freePort();
  const t0 = performance.now();
  // BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof": node options for the service alone (profiles).
  const nodeArgs = [...(o.nodeArgs ?? []), ...(process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  const child = spawn(
    process.execPath,
    [...nodeArgs, path.join(root, 'dist/lib/runtime/cli.js'), 'start', '--app', o.app ?? root, '--port', String(port), '--data-dir', dataDir],
    {
      env: {
        ...process.env,
        AzureWebJobsStorage: storage,
        AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
        Service__DataDir: dataDir,
        Authentication__Negotiate__Enabled: 'false',
        Engine__InstanceName: 'bench',
        LOG_FORMAT: '',
        // The benches' file connectors read temporary folders.
        Connectors__File__Roots: os.tmpdir(),
        ...(o.env ?? {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let logs = '';
  // BENCH_SERVICE_LOG=<file>: everything the service prints also goes to that file (to see a stalled run).
  const logFile = process.env.BENCH_SERVICE_LOG;
  const keep = (d) => {
    const text = d.toString();
    logs = (logs + text).slice(-20000);
    if (logFile) require('node:fs').appendFileSync(logFile, text);
    o.onOutput?.(text);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((r) => child.once('exit', r));

  let stopped;
  const stop = () => {
    stopped ??= (async () => {
      removeInterrupt();
      await stopChild(child, exited);
      await proxy?.close();
      if (ownAzurite) await azurite.stop();
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    })();
    return stopped;
  };
  const removeInterrupt = onInterrupt(() => {
    child.kill('SIGKILL');
    return stop();
  });

  const base = `http://127.0.0.1:${port}/api`;
  let token;
  try {
    const deadline = Date.now() + (o.startTimeoutSeconds ?? 120) * 1000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`service exited with code ${child.exitCode}:\n${logs.slice(-4000)}`);
      try {
        if ((await fetch(`${base}/health`)).status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`service did not start:\n${logs.slice(-4000)}`);
      await sleep(100);
    }
    token = o.token ?? (await devIssuerToken(dataDir));
  } catch (err) {
    await stop();
    throw err;
  }
  const startSeconds = (performance.now() - t0) / 1000;

  /** One Admin API call: `route` is relative to /api; the body is sent as JSON. */
  const call = async (method, route, body) => {
    const send = () =>
      fetch(`${base}/${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    let r;
    for (let attempt = 1; ; attempt++) {
      try {
        r = await send();
        break;
      } catch (err) {
        // A GET sent on a kept-alive connection the service closed meanwhile (its idle timer fires late when a
        // long step held its event loop) fails with no answer: it is safe to send again. Other methods are not.
        if (method !== 'GET' || attempt >= 3 || child.exitCode !== null) throw err;
        await sleep(200);
      }
    }
    const text = await r.text();
    let parsed;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: r.status, body: parsed };
  };
  /** The body of a call that must answer `status`; otherwise throws with the answer and the service's last log lines. */
  const must = async (p, status) => {
    const r = await p;
    if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}\n${logs.slice(-6000)}`);
    return r.body;
  };
  const tablePid = azurite.pids[0];
  /** POSTs `body` to `route` (a run starts: 202 with runId) and polls the run until it ends (see runImport). */
  const runOp = async (route, body, label) => {
    const t = performance.now();
    const c0 = { service: cpuSeconds(child.pid), main: cpuSeconds(child.pid, child.pid), azurite: cpuSeconds(tablePid), steal: stealSeconds() };
    const started = await must(call('POST', route, body), 202);
    for (;;) {
      if (child.exitCode !== null) throw new Error(`service exited during the ${label}:\n${logs.slice(-4000)}`);
      const r = await must(call('GET', `runs/${started.runId}`), 200);
      if (!['Running', 'Queued'].includes(r.status)) {
        const used = (now, before) => (now === null || before === null ? null : +(now - before).toFixed(1));
        const cpu = {
          serviceCpuSeconds: used(cpuSeconds(child.pid), c0.service),
          // Its main thread (the JavaScript); the rest of serviceCpuSeconds is V8's helper threads (optimizing
          // compiles, parallel and concurrent garbage collection) and libuv's.
          serviceMainThreadCpuSeconds: used(cpuSeconds(child.pid, child.pid), c0.main),
          azuriteCpuSeconds: used(cpuSeconds(tablePid), c0.azurite),
          stealSeconds: used(stealSeconds(), c0.steal),
          load: os.loadavg()[0],
        };
        return { seconds: (performance.now() - t) / 1000, run: r, cpu };
      }
      await sleep(100);
    }
  };
  /**
   * Triggers an import and polls the run until it is neither Queued nor Running. `seconds` is trigger to end;
   * `cpu` holds the CPU seconds the service (and its main thread alone) and the Azurite table process used
   * meanwhile, the CPU seconds the hypervisor stole from the machine meanwhile (all CPUs), and the 1-min load.
   */
  const runImport = (connectorId, runType) => runOp(`connectors/${connectorId}/import`, { runType }, runType);
  /** An export run of the connector, measured as {@link runImport}. */
  const runExport = (connectorId) => runOp(`connectors/${connectorId}/export`, {}, 'export');
  return {
    base,
    pid: child.pid,
    tablePid,
    azurite,
    /** With azuriteLocation: the options npm start's limits added to that Azurite ({} when the build has none). */
    azuriteLimits: limits,
    storageRequests: proxy ? () => proxy.take() : null,
    dataDir,
    token,
    startSeconds,
    call,
    must,
    runImport,
    runExport,
    logs: () => logs,
    stop,
    /** Stops the service process only (its storage keeps running: a later startService({ azurite }) reuses it). */
    stopEngine: () => stopChild(child, exited),
  };
}

/** An Admin token from the development issuer of the service whose data folder is `dataDir`. */
async function devIssuerToken(dataDir) {
  const info = JSON.parse(readFileSync(path.join(dataDir, 'dev-issuer.json'), 'utf8'));
  const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(info.clientSecret)}`).toString('base64');
  const res = await fetch(info.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    body: 'grant_type=client_credentials&role=Admin',
  });
  if (res.status !== 200) throw new Error(`dev issuer token: ${res.status}`);
  return (await res.json()).access_token;
}

/**
 * The storage floor: `n` entities of about `bytes` (default 600) bytes batch-inserted into a new table of the Azurite at
 * `connectionString`, 100 per transaction, 4 transactions in flight. Returns the seconds and the Azurite
 * table process's CPU seconds (when its pid is given).
 */
async function storageFloor(connectionString, table, n, tablePid, bytes = 600) {
  const { TableClient } = require('@azure/data-tables');
  const client = TableClient.fromConnectionString(connectionString, table, { allowInsecureConnection: true });
  await client.createTable();
  const pad = 'x'.repeat(Math.max(1, Math.round(bytes)));
  const cpu0 = tablePid ? cpuSeconds(tablePid) : 0;
  const steal0 = stealSeconds();
  const t0 = performance.now();
  const batches = [];
  for (let i = 0; i < n; i += 100) batches.push(i);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches.length) {
        const s = batches[next++];
        const actions = [];
        for (let i = s; i < Math.min(n, s + 100); i++)
          actions.push(['create', { partitionKey: `p${Math.floor(s / 10000)}`, rowKey: String(i).padStart(8, '0'), d: pad }]);
        await client.submitTransaction(actions);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return {
    entities: n,
    seconds: +seconds.toFixed(2),
    entitiesPerSecond: Math.round(n / seconds),
    ...(tablePid ? { azuriteCpuSeconds: +(cpuSeconds(tablePid) - cpu0).toFixed(1) } : {}),
    stealSeconds: +(stealSeconds() - steal0).toFixed(1),
  };
}

/**
 * The storage floor on a fresh Azurite process of its own, started for it and stopped after: in memory, or
 * persisting to `location` (a folder) when given, with `npm start`'s limits as the service's (startService
 * azuriteLocation); entities of about `bytes` bytes (default 600).
 */
async function freshStorageFloor(n, root = ROOT, { location, bytes } = {}) {
  const { Azurite } = require(path.join(root, 'dist/lib/runtime/azurite.js'));
  const azurite = new Azurite(azuriteOptions(location ? { location, ...embeddedLimits(root, process.env) } : {}));
  await azurite.start();
  const removeInterrupt = onInterrupt(() => azurite.stop());
  try {
    const tablePid = azurite.pids[0];
    const out = await storageFloor(azurite.connectionString, 'FloorBench', n, tablePid, bytes);
    return { ...out, bytesPerEntity: bytes ?? 600, persistence: location ? 'disk' : 'memory', azuritePeakRssMB: peakRssMB(tablePid) };
  } finally {
    removeInterrupt();
    await azurite.stop();
  }
}

/**
 * The storage calls a service counts with bench/support/countStorage.js: `{ nodeArgs, env }` to give
 * startService, and `take()`, the counts since the last take (table -> method -> n, and `total`: the storage
 * requests: a transaction one, a query one and one per page after its first read through byPage).
 */
function storageCounter(dir) {
  const file = path.join(dir, `storage-counts-${process.pid}.json`);
  const read = () => {
    try {
      return JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      return { flush: 0, counts: {} };
    }
  };
  let last = {};
  let flushes = 0;
  return {
    nodeArgs: ['--require', path.join(__dirname, 'support', 'countStorage.js')],
    env: { COUNT_STORAGE_FILE: file },
    /** Asks the service (`pid`) for its counts (SIGUSR2) and returns those since the last take. */
    async take(pid) {
      process.kill(pid, 'SIGUSR2');
      let now;
      for (let i = 0; i < 100; i++) {
        now = read();
        if (now.flush > flushes) break;
        await sleep(20);
      }
      flushes = now.flush;
      const out = { total: 0, byFamily: {}, byTable: {} };
      for (const [table, methods] of Object.entries(now.counts)) {
        const diff = {};
        for (const [m, n] of Object.entries(methods)) {
          const d = n - (last[table]?.[m] ?? 0);
          if (d) diff[m] = d;
        }
        if (!Object.keys(diff).length) continue;
        out.byTable[table] = diff;
        // Tables split by partition (Mesh7, Meshf, ConnectorSpace0, ...) summed under their family's name.
        const family = (out.byFamily[table.replace(/(Mesh|ConnectorSpace)[0-9a-f]$/, '$1').replace(/^h[0-9a-f]{20}/, 'durable')] ??= {});
        for (const [m, d] of Object.entries(diff)) family[m] = (family[m] ?? 0) + d;
        for (const m of [
          'listEntities',
          'listMorePages',
          'getEntity',
          'submitTransaction',
          'createEntity',
          'upsertEntity',
          'updateEntity',
          'deleteEntity',
          'createTable',
          'deleteTable',
        ])
          out.total += diff[m] ?? 0;
      }
      last = now.counts;
      return out;
    },
  };
}

/** The columns of the sync benches' users.csv. */
const HR_HEADER = [
  'id',
  'employeeId',
  'givenName',
  'sn',
  'mail',
  'title',
  'department',
  'company',
  'office',
  'phone',
  'mobile',
  'city',
  'country',
  'costCenter',
  'hireDate',
  'managerId',
];

/**
 * Row `i` of `n` users (15 attributes and a manager, user (i * 7919) % n); `variant` 1 changes sn. `offset`
 * shifts the ids, employee ids and manager references (a second source of other people: offset n).
 */
function hrRow(i, n, variant = 0, offset = 0) {
  const e = (k) => `E${String(k + offset).padStart(6, '0')}`;
  const mgr = i === 0 ? '' : e(Math.floor((i * 7919) % n));
  return [
    `u${i + offset}`,
    e(i),
    `Given${i}`,
    `Surname${i}${variant ? 'x' : ''}`,
    `user${i}@example.test`,
    `Title ${i % 50}`,
    `Dept ${i % 40}`,
    'Contoso',
    `Office ${i % 30}`,
    `+1 555 ${String(i).padStart(7, '0')}`,
    `+1 666 ${String(i).padStart(7, '0')}`,
    `City ${i % 100}`,
    'US',
    `CC${i % 200}`,
    '2020-01-01',
    mgr === e(i) ? '' : mgr,
  ].join(',');
}

/**
 * Write `dir`/users.csv with `n` users (hrRow), the `changed` ones as variant 1, without the `deleted` ones;
 * `offset`: see hrRow.
 */
function writeHrCsv(dir, n, { changed = new Set(), deleted = new Set(), offset = 0 } = {}) {
  const lines = [HR_HEADER.join(',')];
  for (let i = 0; i < n; i++) if (!deleted.has(i)) lines.push(hrRow(i, n, changed.has(i) ? 1 : 0, offset));
  require('node:fs').writeFileSync(require('node:path').join(dir, 'users.csv'), lines.join('\n') + '\n');
}

/**
 * The sync benches' source (bench/sync/sync.js, bench/space/oneObject.js): an `HR` file connector reading
 * users.csv in `csvDir` (anchor `id`), a join and a projection on employeeId, flows of employeeId, sn
 * (upper-cased) and managerId, and the `manager` relationship; `extraConfig` joins the connector's config (a
 * deletion threshold). `name`: the connector's name; `composer: false` leaves out the relationship rule (it is
 * global: a second source needs none of its own). Returns the connector and `rule`, which adds a rule to it.
 */
async function hrSource({ call, must }, csvDir, extraConfig = {}, { name = 'HR', composer = true } = {}) {
  const conn = await must(
    call('POST', 'connectors', {
      name,
      type: 'custom',
      config: { implementation: 'file', objectType: 'User', settings: { path: csvDir, anchorColumn: 'id' }, ...extraConfig },
    }),
    201,
  );
  const rule = (b) => must(call('POST', 'rules', { ruleName: `r${Math.random()}`, connectorId: conn.id, ...b }), 201);
  await rule({ ruleType: 'JoinRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId' });
  await rule({ ruleType: 'ProjectionRule', sourceAttribute: 'employeeId' });
  await rule({ ruleType: 'FlowRule', sourceAttribute: 'employeeId', targetAttribute: 'employeeId', confidence: 50 });
  await rule({ ruleType: 'FlowRule', sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50, transformScript: 'source.toUpperCase()' });
  await rule({ ruleType: 'FlowRule', sourceAttribute: 'managerId', targetAttribute: 'managerId', confidence: 50 });
  if (composer)
    await rule({ ruleType: 'MeshComposerRule', connectorId: null, relationshipType: 'manager', sourceAttribute: 'managerId', targetAttribute: 'employeeId' });
  return { conn, rule };
}

module.exports = {
  storageCounter,
  azuriteOptions,
  ROOT,
  arg,
  sleep,
  peakRssMB,
  rssMB,
  cpuSeconds,
  stealSeconds,
  onInterrupt,
  stopChild,
  startService,
  storageFloor,
  freshStorageFloor,
  hrSource,
  HR_HEADER,
  hrRow,
  writeHrCsv,
};
