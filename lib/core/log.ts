/**
 * The service's one logger for what happens outside an invocation (start steps, background loops, engine
 * traces): an invocation logs through its InvocationContext instead. Lines go to the worker's console, which
 * both the local runtime and the Functions host capture (the local runtime formats them as text or JSON,
 * `LOG_FORMAT`). Each area logs under its name (`[mesh] ...`). Messages never carry tokens, passwords or keys.
 */
export type LogLevel = 'info' | 'warn' | 'error';

export interface AreaLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Write one line at `level` for `area`. The only place in lib/ outside the runtime that writes to the console. */
export function writeLog(area: string, level: LogLevel, message: string): void {
  const line = `[${area}] ${message}`;
  if (level === 'error') console.error(line);
  else if (level === 'warn') console.warn(line);
  else console.log(line);
}

/** The logger of one area. */
export function areaLog(area: string): AreaLog {
  return {
    info: (m) => writeLog(area, 'info', m),
    warn: (m) => writeLog(area, 'warn', m),
    error: (m) => writeLog(area, 'error', m),
  };
}
