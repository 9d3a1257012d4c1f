import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { ConnectorContext } from '../sdk';
import type { SqlDialect } from './params';
import type { SqlConfig } from './schema';

/** Connection and query settings with their defaults applied. */
export interface ResolvedSqlConfig extends SqlConfig {
  port: number;
  objectType: string;
  timeoutSeconds: number;
  deltaOverlapSeconds: number;
  stateDirectory: string;
}

/** The most rows a page holds, whatever page size is asked for. */
export const MAX_PAGE = 10000;

/** The page size asked for, between 1 and `MAX_PAGE`. */
export function pageSizeOf(asked: number): number {
  return Math.max(1, Math.min(MAX_PAGE, Math.floor(asked) || 1));
}

const DEFAULT_PORTS: Record<SqlDialect, number> = { postgres: 5432, mysql: 3306, mssql: 1433 };

/**
 * The configuration with its defaults applied; the state directory is a subfolder per connector (by id, or by a
 * hash of where it reads when there is none).
 */
export function resolveSqlConfig(config: SqlConfig, context: ConnectorContext = {}): ResolvedSqlConfig {
  const key =
    context.connectorId ??
    createHash('sha256')
      .update(JSON.stringify([config.dialect, config.host, config.port ?? null, config.database, config.fullImportQuery]))
      .digest('hex')
      .slice(0, 24);
  const base = context.stateDirectory ?? path.join(os.tmpdir(), 'identity-sync-sql-connector');
  return {
    ...config,
    port: config.port ?? DEFAULT_PORTS[config.dialect],
    objectType: config.objectType ?? 'User',
    timeoutSeconds: config.timeoutSeconds ?? 30,
    deltaOverlapSeconds: config.deltaOverlapSeconds ?? 0,
    stateDirectory: path.join(base, 'sql-' + key.replace(/[^A-Za-z0-9_.-]/g, '_')),
  };
}
/**
 * A fingerprint of the settings that shape what is read (object type, anchor, queries, delta column, delete
 * detection, references): cursors and watermarks carry it, and one written under other settings is not used.
 */
export function settingsFingerprint(c: ResolvedSqlConfig): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        c.objectType,
        c.anchorColumn,
        c.fullImportQuery,
        c.deltaColumn ?? null,
        c.deleteDetection ?? null,
        c.referenceColumns ?? {},
        c.multiValueQueries ?? {},
      ]),
    )
    .digest('base64url')
    .slice(0, 16);
}
