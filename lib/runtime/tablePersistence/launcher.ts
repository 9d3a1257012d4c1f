/**
 * Entry of the embedded Azurite table process (spawned by lib/runtime/azurite.ts in place of Azurite's own
 * table main, with the same arguments). Before Azurite loads, it installs the table store's index
 * (../azuriteTableIndex.ts), swaps LokiJS' single-file persistence for
 * the streamed adapter (./adapter.ts), stretches the save interval while saves are slow, saves on SIGTERM
 * (Azurite's table main saves on SIGINT only) and writes ./stats.ts' file into the data folder.
 *
 * Settings arrive as environment variables from the parent: AZURITE_TABLE_SAVE_MS (save interval, default
 * 5000), AZURITE_TABLE_COMPACT_RATIO (a table is written whole when its journal reaches this many times its
 * collection file; default 1), AZURITE_TABLE_HEAP_WARN_PERCENT, AZURITE_TABLE_DATA_WARN_BYTES, AZURITE_TABLE_STATS_MS,
 * AZURITE_TABLE_DEFER_BYTES (tables larger on disk load in the background after the server answers; 0: none) and,
 * for tests, AZURITE_TABLE_DEFER_DELAY_MS (the background load begins that much later).
 */
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { type LokiDbLike, StreamedTableAdapter, tableDataBytes } from './adapter';
import { STATS_FILE, storageWarnings, type TableStats } from './stats';
import { installTableIndex } from '../azuriteTableIndex';

type LokiCtor = { new (filename: string, options?: Record<string, unknown>): LokiDb; prototype: LokiDb };
interface LokiDb extends LokiDbLike {
  autosaveDirty(): boolean;
  close(callback?: (err?: unknown) => void): void;
  autosaveInterval?: number;
}

const num = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const baseIntervalMs = num('AZURITE_TABLE_SAVE_MS', 5000);
const thresholds = { heapPercent: num('AZURITE_TABLE_HEAP_WARN_PERCENT', 70), dataBytes: num('AZURITE_TABLE_DATA_WARN_BYTES', Number.MAX_SAFE_INTEGER) };
const statsEveryMs = num('AZURITE_TABLE_STATS_MS', 10_000);
/** Tables whose files hold more than this load after the server answers (0: all before; AZURITE_TABLE_DEFER_BYTES). */
const deferBytes = process.env.AZURITE_TABLE_DEFER_BYTES === '0' ? 0 : num('AZURITE_TABLE_DEFER_BYTES', 0);
/** Saving takes at most a third of the time: after a save of T ms, the next waits max(interval, 2T). */
const SLOW_SAVE_FACTOR = 2;

const argv = process.argv;
const locIdx = argv.findIndex((a) => a === '--location' || a === '-l');
const location = locIdx > 0 ? path.resolve(argv[locIdx + 1]) : undefined;

let closing = false;
let terminating = false;
let closed = false;
let nextSaveAt = 0;
let saveIntervalMs = baseIntervalMs;
const adapters: { adapter: StreamedTableAdapter; dbname: string }[] = [];
const log = (line: string) => process.stdout.write(`${line}\n`);

function patchLoki(azuriteDir: string): void {
  const lokiPath = require.resolve('lokijs', { paths: [azuriteDir] });
  const Loki = require(lokiPath) as LokiCtor;
  function StreamedLoki(this: unknown, filename: string, options?: Record<string, unknown>): LokiDb {
    if (options?.persistenceMethod !== 'fs') return new Loki(filename, options);
    const adapter = new StreamedTableAdapter({
      onSave: (r) => {
        saveIntervalMs = Math.max(baseIntervalMs, SLOW_SAVE_FACTOR * r.ms);
        nextSaveAt = Date.now() + saveIntervalMs;
        if (r.ms > 1000)
          log(
            `Table data saved in ${r.ms} ms (${r.collectionsWritten} tables, ${r.collectionsRewritten} of them whole, ${r.bytesWritten} bytes); next save in ${saveIntervalMs} ms at the earliest.`,
          );
        writeStats();
      },
      onError: (err) => log(`Table data could not be saved (kept in memory, retried at the next save): ${err.message}`),
      compactRatio: num('AZURITE_TABLE_COMPACT_RATIO', 1),
      // Azurite's own collections are named `$...$`; entity tables `<account>$<table>` use the table index.
      dropBinaryIndices: (name) => !name.startsWith('$'),
      deferBytes,
      deferDelayMs: num('AZURITE_TABLE_DEFER_DELAY_MS', 0),
      onDeferredStart: (n, bytes) => {
        log(`Loading ${n} large table(s) (${Math.round(bytes / 1048576)} MB) in the background; requests for them wait until each is loaded.`);
        writeStats();
      },
      onDeferredLoaded: (name, ms, bytes) => {
        if (ms > 1000) log(`Table ${name} loaded in the background in ${ms} ms (${Math.round(bytes / 1048576)} MB).`);
        writeStats();
      },
      onDeferredDone: (n, ms) => {
        log(`Every table is loaded: ${n} large table(s) loaded in the background in ${ms} ms.`);
        writeStats();
      },
      onDeferredFailed: (err) => log(`${err.message} Requests for it fail; its files are kept as they are.`),
    });
    const { persistenceMethod: _fs, ...rest } = options;
    const db = new Loki(filename, { ...rest, adapter, autosaveInterval: Math.min(baseIntervalMs, 5000) });
    adapters.push({ adapter, dbname: filename });
    adapter.watch(db);
    const dirty = db.autosaveDirty.bind(db);
    db.autosaveDirty = () => (closing || Date.now() >= nextSaveAt) && dirty();
    const load = db.loadDatabase.bind(db);
    db.loadDatabase = (opts, callback) =>
      load(opts, (err) => {
        writeStats();
        callback?.(err);
      });
    const close = db.close.bind(db);
    db.close = (callback) => {
      closing = true;
      close((err) => {
        closed = true;
        writeStats();
        callback?.(err);
        // Azurite's close leaves nothing else to wait for; the timer only guards against a stray handle.
        if (terminating) setTimeout(() => process.exit(err ? 1 : 0), 200).unref();
      });
    };
    return db;
  }
  Object.setPrototypeOf(StreamedLoki, Loki);
  StreamedLoki.prototype = Loki.prototype;
  const cached = require.cache[lokiPath];
  if (!cached) throw new Error('lokijs is not in the module cache');
  cached.exports = StreamedLoki;
}

/**
 * Azurite's table store methods that reach a table's entities (every async one but those of the table list,
 * the service properties and the store's own life) first wait for that table when it is still loading in the
 * background (`deferBytes`). The table is found among the call's string arguments, `<account>$<table>` as
 * Azurite names its collections (its methods take account and table in either order). A batch waits in its
 * first operation, before it has changed anything, so batches never interleave halfway.
 */
function waitForDeferredTables(azuriteDir: string): void {
  const Store = (require(path.join(azuriteDir, 'dist/src/table/persistence/LokiTableMetadataStore.js')) as { default: { prototype: Record<string, unknown> } })
    .default;
  const proto = Store.prototype;
  const skip = new Set([
    'init',
    'close',
    'clean',
    'createTable',
    'queryTable',
    'getTable',
    'setTableACL',
    'getServiceProperties',
    'setServiceProperties',
    'beginBatchTransaction',
    'loadDB',
    'saveDBState',
  ]);
  const waitFor = (args: unknown[]): Promise<unknown> | undefined => {
    const adapter = adapters[0]?.adapter;
    if (!adapter || adapter.loadingTables === 0) return undefined;
    const strings = args.filter((a): a is string => typeof a === 'string');
    const waits: Promise<void>[] = [];
    for (const a of strings)
      for (const b of strings) {
        if (a === b) continue;
        const w = adapter.whenLoaded(`${a}$${b.toLowerCase()}`) ?? adapter.whenLoaded(`${a}$${b}`);
        if (w) waits.push(w);
      }
    return waits.length ? Promise.all(waits) : undefined;
  };
  for (const name of Object.getOwnPropertyNames(proto)) {
    const fn = proto[name];
    if (skip.has(name) || typeof fn !== 'function' || fn.constructor.name !== 'AsyncFunction') continue;
    proto[name] = async function (this: unknown, ...args: unknown[]) {
      const w = waitFor(args);
      if (w) await w;
      return (fn as (...a: unknown[]) => Promise<unknown>).apply(this, args);
    };
  }
  // Anything else that reaches a table still loading fails plainly instead of answering "no such table".
  const getEntityCollection = proto.getEntityCollection as (this: unknown, account: string, table: string, context: unknown) => unknown;
  proto.getEntityCollection = function (this: unknown, account: string, table: string, context: unknown) {
    const adapter = adapters[0]?.adapter;
    if (adapter && adapter.loadingTables && (adapter.whenLoaded(`${account}$${table.toLowerCase()}`) || adapter.whenLoaded(`${account}$${table}`))) {
      throw new Error(`Table ${table} is still being loaded; try again shortly.`);
    }
    return getEntityCollection.call(this, account, table, context);
  };
}

function writeStats(): void {
  if (!location || adapters.length === 0) return;
  const { adapter, dbname } = adapters[0];
  const heap = v8.getHeapStatistics();
  const loading = adapter.pending;
  const base = {
    heapUsedBytes: heap.used_heap_size,
    heapLimitBytes: heap.heap_size_limit,
    dataBytes: tableDataBytes(dbname),
    lastSaveError: adapter.lastError,
    ...(loading.tables ? { loading } : {}),
  };
  const stats: TableStats = {
    pid: process.pid,
    updatedAt: new Date().toISOString(),
    ...base,
    rssBytes: process.memoryUsage.rss(),
    lastSave: adapter.lastSave && { at: new Date(nextSaveAt - saveIntervalMs).toISOString(), ...adapter.lastSave },
    saveIntervalMs,
    warnings: storageWarnings(base, thresholds),
  };
  const file = path.join(location, STATS_FILE);
  try {
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(stats));
    fs.renameSync(`${file}.tmp`, file);
  } catch (err) {
    log(`Could not write ${file}: ${(err as Error).message}`);
  }
}

function main(): void {
  const azuriteDir = path.dirname(require.resolve('azurite/package.json'));
  patchLoki(azuriteDir);
  installTableIndex(azuriteDir);
  waitForDeferredTables(azuriteDir);
  // Azurite's table main closes (and so saves) on SIGINT only; a SIGTERM would end the process unsaved.
  // `on`, not `once`: a second SIGTERM during the save must not kill the process half-way.
  process.on('SIGTERM', () => {
    if (terminating) return;
    terminating = true;
    // Already closing (a Ctrl+C reached this process group first): the close callback exits.
    if (closed) process.exit(0);
    if (closing) return;
    // Before Azurite's handler exists (still loading) there is nothing unsaved.
    if (adapters.length === 0 || process.listenerCount('SIGINT') === 0) process.exit(0);
    process.emit('SIGINT', 'SIGINT');
  });
  if (location) setInterval(writeStats, statsEveryMs).unref();
  require(path.join(azuriteDir, 'dist/src/table/main.js'));
  // The first stats once Azurite has loaded its data (its server answers after the load).
  if (location) setTimeout(writeStats, 500).unref();
}

main();
