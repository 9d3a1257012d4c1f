import { writeLog } from '../core/log';

/**
 * Start-time and background messages of the authentication area, through the service's logger
 * (lib/core/log.ts). Injected as a function so tests can collect them. Messages never carry tokens,
 * passwords or keys.
 */
export type AuthLogLevel = 'info' | 'warn' | 'error';
export type AuthLogger = (level: AuthLogLevel, message: string) => void;

export const consoleLogger: AuthLogger = (level, message) => writeLog('auth', level, message);
