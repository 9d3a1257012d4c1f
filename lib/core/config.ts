/**
 * Configuration, read the way the Functions host hands it to a worker: app settings arrive as environment
 * variables (the host copies `local.settings.json` `Values` into the environment; a variable already set in
 * the environment wins). A hierarchical key `Authentication:Jwt:Enabled` is spelled `Authentication__Jwt__Enabled`
 * in the environment; both spellings are accepted.
 *
 * Every setting is read through a `SettingsReader`, so a bad value fails at start with a message naming the
 * exact setting. Each area of the service owns its section (see `lib/auth/authConfig.ts` and friends);
 * `loadConfig()` composes them once.
 */

export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`Configuration error in setting '${setting}': ${message}`);
    this.name = 'ConfigError';
  }
}

export type Environment = 'Development' | 'Staging' | 'Production' | string;

export class SettingsReader {
  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {}

  /** The raw value of a setting named `A:B:C` (or `A__B__C`), or undefined when unset or empty. */
  raw(name: string): string | undefined {
    const underscored = name.replace(/:/g, '__');
    for (const key of [underscored, underscored.replace(/__/g, ':')]) {
      const v = this.env[key];
      if (v !== undefined && v !== '') return v;
    }
    // Environment variable names are case-insensitive on Windows and in the Functions host.
    const lower = underscored.toLowerCase();
    for (const [k, v] of Object.entries(this.env)) {
      if (k.toLowerCase() === lower && v !== undefined && v !== '') return v;
    }
    return undefined;
  }

  string(name: string, fallback: string): string;
  string(name: string): string | undefined;
  string(name: string, fallback?: string): string | undefined {
    return this.raw(name) ?? fallback;
  }

  /** Whether AZURE_FUNCTIONS_ENVIRONMENT is Development (any case): the only place test hooks are honoured. */
  isDevelopment(): boolean {
    return this.string('AZURE_FUNCTIONS_ENVIRONMENT', 'Production').toLowerCase() === 'development';
  }

  requiredString(name: string, why: string): string {
    const v = this.raw(name);
    if (v === undefined) throw new ConfigError(name, `is required ${why}.`);
    return v;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (/^(true|1|yes)$/i.test(v)) return true;
    if (/^(false|0|no)$/i.test(v)) return false;
    throw new ConfigError(name, `must be true or false, not '${v}'.`);
  }

  int(name: string, fallback: number, range: { min?: number; max?: number } = {}): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!/^-?\d+$/.test(v.trim())) throw new ConfigError(name, `must be a whole number, not '${v}'.`);
    const n = Number(v);
    if (range.min !== undefined && n < range.min) throw new ConfigError(name, `must be at least ${range.min}, not ${n}.`);
    if (range.max !== undefined && n > range.max) throw new ConfigError(name, `must be at most ${range.max}, not ${n}.`);
    return n;
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const hit = values.find((x) => x.toLowerCase() === v.toLowerCase());
    if (!hit) throw new ConfigError(name, `must be one of ${values.join(', ')}, not '${v}'.`);
    return hit;
  }

  url(name: string): URL | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    try {
      return new URL(v);
    } catch {
      throw new ConfigError(name, `must be an absolute URL, not '${v}'.`);
    }
  }

  /** Every setting whose name starts with `prefix:` as a flat map of the remaining key to value. */
  section(prefix: string): Record<string, string> {
    const out: Record<string, string> = {};
    const p = prefix.replace(/:/g, '__').toLowerCase() + '__';
    for (const [k, v] of Object.entries(this.env)) {
      const key = k.replace(/:/g, '__');
      if (v !== undefined && v !== '' && key.toLowerCase().startsWith(p)) out[key.slice(p.length)] = v;
    }
    return out;
  }
}

export interface CoreConfig {
  environment: Environment;
  isDevelopment: boolean;
  /** `AzureWebJobsStorage`: a connection string, or `UseDevelopmentStorage=true` for Azurite. */
  storageConnectionString: string;
  /** Where the service keeps local files (the Development secrets key, Azurite's data). */
  dataDir: string;
}

export function readCoreConfig(settings = new SettingsReader()): CoreConfig {
  const environment = settings.string('AZURE_FUNCTIONS_ENVIRONMENT', 'Production');
  return {
    environment,
    isDevelopment: environment.toLowerCase() === 'development',
    storageConnectionString: settings.requiredString('AzureWebJobsStorage', 'to reach Azure Table Storage (use UseDevelopmentStorage=true for Azurite)'),
    dataDir: settings.string('Service:DataDir', '.data'),
  };
}

/** `Export:MaxAttempts` (default 5): how many export runs try a change the target refuses before skipping it. */
export const DEFAULT_EXPORT_MAX_ATTEMPTS = 5;

/** `Export__MaxAttempts`, a whole number from 1 to 1000 (read at start by a service step, and by every export page). */
export function readExportMaxAttempts(settings = new SettingsReader()): number {
  return settings.int('Export:MaxAttempts', DEFAULT_EXPORT_MAX_ATTEMPTS, { min: 1, max: 1000 });
}

/**
 * `Sync:IdleConnectorSpaceCaches` (default 2): connectors whose connector-space summaries stay in memory with no
 * run going. Two keep a directory, an HR source and an export target all in memory (one runs, two wait): with
 * one, each delta after another connector's run read its whole space again (about 6 s per 300,000 objects).
 */
export const DEFAULT_IDLE_CS_CACHES = 2;

/**
 * `Sync__IdleConnectorSpaceCaches`, a whole number from 0 to 1000 (read at start by a service step, and when a
 * run ends): how many idle connectors keep their connector-space summaries in memory (lib/sync/space/csCaches.ts).
 */
export function readIdleCsCaches(settings = new SettingsReader()): number {
  return settings.int('Sync:IdleConnectorSpaceCaches', DEFAULT_IDLE_CS_CACHES, { min: 0, max: 1000 });
}

/**
 * `Mesh__ReadModelSnapshot` (default true): whether the mesh read model keeps a snapshot of itself under the
 * data folder and starts from it (lib/mesh/readModelSnapshot.ts). Read at start by the read model's service step.
 */
export function readReadModelSnapshot(settings = new SettingsReader()): boolean {
  return settings.bool('Mesh:ReadModelSnapshot', true);
}

/** `Mesh__ReadModelSnapshotIdleSeconds` (default 60, 1 to 86400): how long the feed stays quiet after a change before the snapshot is written. */
export function readReadModelSnapshotIdleSeconds(settings = new SettingsReader()): number {
  return settings.int('Mesh:ReadModelSnapshotIdleSeconds', 60, { min: 1, max: 86400 });
}

/** A positive number setting with fractions allowed, within [min, max]. */
function fractional(settings: SettingsReader, name: string, fallback: number, min: number, max: number, unit: string): number {
  const v = settings.raw(name);
  if (v === undefined) return fallback;
  if (!/^\d+(\.\d+)?$/.test(v.trim())) throw new ConfigError(name, `must be a number of ${unit} (fractions allowed), not '${v}'.`);
  const n = Number(v);
  if (n < min) throw new ConfigError(name, `must be at least ${min}, not ${n}.`);
  if (n > max) throw new ConfigError(name, `must be at most ${max}, not ${n}.`);
  return n;
}

/**
 * `Mesh__FeedRetentionMinutes` (default 60, 0.01 to 525600, fractions allowed): the mesh change feed keeps every
 * row at least this long, and a process's hold on the feed counts while it is this recent (lib/sync/run/feedTrim.ts).
 */
export function readFeedRetentionMinutes(settings = new SettingsReader()): number {
  return fractional(settings, 'Mesh:FeedRetentionMinutes', 60, 0.01, 525600, 'minutes');
}

/**
 * `Mesh__FeedExportRetentionDays` (default 7, 0.0001 to 36500, fractions allowed): how long the feed keeps the
 * changes an export connector has not exported yet; past it they go, and that connector's next export looks at
 * every object.
 */
export function readFeedExportRetentionDays(settings = new SettingsReader()): number {
  return fractional(settings, 'Mesh:FeedExportRetentionDays', 7, 0.0001, 36500, 'days');
}

/**
 * `Mesh__FeedTrimSeconds` (default 300, 1 to 3600): the period of the feed's trim. Tests lower it; the default
 * suits production.
 */
export function readFeedTrimSeconds(settings = new SettingsReader()): number {
  return settings.int('Mesh:FeedTrimSeconds', 300, { min: 1, max: 3600 });
}

/** `Mesh:HistoryRetentionDays` (default 90): how long the history of mesh objects is kept. */
export const DEFAULT_HISTORY_RETENTION_DAYS = 90;

/** `Mesh__HistoryRetentionDays`, a whole number of days from 1 to 36500 (read at start by a service step). */
export function readHistoryRetentionDays(settings = new SettingsReader()): number {
  return settings.int('Mesh:HistoryRetentionDays', DEFAULT_HISTORY_RETENTION_DAYS, { min: 1, max: 36500 });
}

/** `Leavers:RetentionDays` (default 365): how long a confirmed leaver's clock is kept (GET /leavers?state=done). */
export const DEFAULT_LEAVER_RETENTION_DAYS = 365;

/** `Leavers__RetentionDays`, a whole number of days from 1 to 36500 (read at start by the purge's service step). */
export function readLeaverRetentionDays(settings = new SettingsReader()): number {
  return settings.int('Leavers:RetentionDays', DEFAULT_LEAVER_RETENTION_DAYS, { min: 1, max: 36500 });
}

/** `Mesh:TombstoneRetentionDays` (default 30): how long a deleted mesh object is kept as a tombstone. */
export const DEFAULT_TOMBSTONE_RETENTION_DAYS = 30;

/**
 * `Mesh__TombstoneRetentionDays`: days, fractions allowed (0.5 is twelve hours), from 0.0001 to 36500 (read by
 * the engine when it deletes a mesh object, and at start by the tombstone purge's service step).
 */
export function readTombstoneRetentionDays(settings = new SettingsReader()): number {
  const name = 'Mesh:TombstoneRetentionDays';
  const v = settings.raw(name);
  if (v === undefined) return DEFAULT_TOMBSTONE_RETENTION_DAYS;
  if (!/^\d+(\.\d+)?$/.test(v.trim())) throw new ConfigError(name, `must be a number of days (fractions allowed), not '${v}'.`);
  const n = Number(v);
  if (n < 0.0001) throw new ConfigError(name, `must be at least 0.0001, not ${n}.`);
  if (n > 36500) throw new ConfigError(name, `must be at most 36500, not ${n}.`);
  return n;
}

/**
 * `Mesh__TombstonePurgeSeconds` (default 60, 1 to 60). TEST ONLY: the period of the tombstone purge's tick.
 * Tests lower it so that a purge comes within seconds; leave it unset in production.
 */
export function readTombstonePurgeSeconds(settings = new SettingsReader()): number {
  return settings.int('Mesh:TombstonePurgeSeconds', 60, { min: 1, max: 60 });
}
