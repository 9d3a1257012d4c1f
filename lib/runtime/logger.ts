import type { RpcLogLevel } from './coreTypes';
import type { RuntimeLogger } from './extension';

/**
 * The runtime's one logger: handler logs (`context.log/warn/error`, arriving through the core invocation
 * context), the programming model's system logs (`coreApi.log`) and the host's own messages. Levels come
 * from host.json `logging.logLevel` with the host's categories: `Host.Startup`, `Host.Results`, `Host.Http`,
 * `Function.<name>` (Executing/Executed and system lines), `Function.<name>.User` (handler logs), `Worker`.
 * The most specific key wins (`Function.<name>` over `Function` over `default`); `Host.*` style keys work.
 * Terminal output is `[time] message`; `LOG_FORMAT=json` writes one JSON object per line.
 */
export type LogFormat = 'text' | 'json';

const LEVELS: Record<RpcLogLevel, number> = { trace: 0, debug: 1, information: 2, warning: 3, error: 4, critical: 5, none: 6 };
const LEVEL_NAMES: Record<RpcLogLevel, string> = {
  trace: 'Trace',
  debug: 'Debug',
  information: 'Information',
  warning: 'Warning',
  error: 'Error',
  critical: 'Critical',
  none: 'None',
};

export function parseLevel(text: unknown): RpcLogLevel | undefined {
  if (typeof text !== 'string') return undefined;
  const t = text.trim().toLowerCase();
  if (t === 'info') return 'information';
  if (t === 'warn') return 'warning';
  return t in LEVELS ? (t as RpcLogLevel) : undefined;
}

export interface LoggerOptions {
  /** host.json `logging.logLevel`. */
  logLevel?: Record<string, unknown>;
  format?: LogFormat;
  /** Where lines go (default: process.stdout). */
  write?: (line: string) => void;
}

export class Logger implements RuntimeLogger {
  readonly format: LogFormat;
  private readonly rules: { key: string; prefix: string; level: RpcLogLevel }[] = [];
  private readonly defaultLevel: RpcLogLevel;
  private readonly cache = new Map<string, number>();
  private readonly write: (line: string) => void;

  constructor(options: LoggerOptions = {}) {
    this.format = options.format ?? 'text';
    this.write = options.write ?? ((line) => this.buffered(line));
    let def: RpcLogLevel = 'information';
    for (const [key, value] of Object.entries(options.logLevel ?? {})) {
      const level = parseLevel(value);
      if (!level) continue;
      if (key.toLowerCase() === 'default') def = level;
      else this.rules.push({ key, prefix: key.replace(/\.?\*$/, '').toLowerCase(), level });
    }
    this.defaultLevel = def;
  }

  private pending: string[] = [];
  private flushScheduled = false;
  private exitHooked = false;

  /**
   * Lines to stdout are gathered and written once per event-loop turn: under load, one write for many lines
   * instead of one system call per line. `flush()` (also run at process exit) writes what is pending.
   */
  private buffered(line: string): void {
    this.pending.push(line);
    if (!this.exitHooked) {
      this.exitHooked = true;
      process.once('exit', this.flush);
    }
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.pending.length === 0) return;
    const text = this.pending.join('');
    this.pending = [];
    process.stdout.write(text);
  };

  /** The minimum level for a category: the longest matching key wins. */
  minLevel(category: string): number {
    const hit = this.cache.get(category);
    if (hit !== undefined) return hit;
    const lower = category.toLowerCase();
    let best: { len: number; level: RpcLogLevel } | undefined;
    for (const r of this.rules) {
      const matches = lower === r.prefix || lower.startsWith(r.prefix + '.') || r.prefix === '';
      if (matches && (!best || r.prefix.length > best.len)) best = { len: r.prefix.length, level: r.level };
    }
    const n = LEVELS[best?.level ?? this.defaultLevel];
    this.cache.set(category, n);
    return n;
  }

  enabled(level: RpcLogLevel, category: string): boolean {
    return level !== 'none' && LEVELS[level] >= this.minLevel(category);
  }

  private lastMs = -1;
  private lastTime = '';

  /** The ISO time of now, formatted once per millisecond (a busy host writes several lines per request). */
  private now(): string {
    const ms = Date.now();
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.lastTime = new Date(ms).toISOString();
    }
    return this.lastTime;
  }

  log(level: RpcLogLevel, category: string, message: string, fields?: Record<string, unknown>): void {
    if (!this.enabled(level, category)) return;
    const time = this.now();
    if (this.format === 'json') {
      this.write(JSON.stringify({ time, level: LEVEL_NAMES[level], category, message, ...fields }) + '\n');
    } else {
      this.write(`[${time}] ${message}\n`);
    }
  }

  info(category: string, message: string, fields?: Record<string, unknown>): void {
    this.log('information', category, message, fields);
  }

  warn(category: string, message: string, fields?: Record<string, unknown>): void {
    this.log('warning', category, message, fields);
  }

  error(category: string, message: string, fields?: Record<string, unknown>): void {
    this.log('error', category, message, fields);
  }

  /**
   * A console block printed the way `func start` prints it (the `Functions:` list): as is on a terminal,
   * as an Information entry in JSON mode. Not subject to level filtering, like the Core Tools banner.
   */
  plain(category: string, message: string, fields?: Record<string, unknown>): void {
    if (this.format === 'json') {
      this.write(JSON.stringify({ time: new Date().toISOString(), level: 'Information', category, message, ...fields }) + '\n');
    } else {
      this.write(message + '\n');
    }
  }
}
