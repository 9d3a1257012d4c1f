/**
 * Start-time and background messages of the authentication area. Service steps run outside any invocation,
 * so there is no InvocationContext to log through: the worker's console is what both the local runtime and
 * the Functions host capture. Messages never carry tokens, passwords or keys.
 */
export type AuthLogLevel = 'info' | 'warn' | 'error';
export type AuthLogger = (level: AuthLogLevel, message: string) => void;

export const consoleLogger: AuthLogger = (level, message) => {
  const line = `[auth] ${message}`;
  if (level === 'error') console.error(line);
  else if (level === 'warn') console.warn(line);
  else console.log(line);
};
