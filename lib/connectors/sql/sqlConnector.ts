import type {
  ConnectionTestResult,
  ConnectorContext,
  DeltaImportOptions,
  DeltaPage,
  ExportChange,
  ExportOptions,
  ExportResult,
  ConnectorSchema,
  FullImportOptions,
  ImportPage,
} from '../sdk';
import { SnapshotStore } from '../file/state';
import { resolveSqlConfig, settingsFingerprint, type ResolvedSqlConfig } from './config';
import { schema, testConnection } from './connectionTest';
import { deltaImport } from './deltaImport';
import { ExportConnection, exportBatch } from './export';
import { fullImport } from './fullImport';
import type { CompiledStatement } from './params';
import type { SqlParts } from './reading';
import type { SqlConfig } from './schema';
import { wrap } from './session';

export { resolveSqlConfig, type ResolvedSqlConfig } from './config';
export { toScalar } from './values';

/**
 * The SQL connector (type `sql`; see docs/connector-sql.md). PostgreSQL, MySQL/MariaDB and SQL Server through
 * their Node drivers, loaded on first use. A thin façade over its jobs, each in its own file:
 *
 * - Full import (fullImport.ts) streams `fullImportQuery` ordered by the anchor column inside one read-only
 *   snapshot transaction, page by page with a keyset cursor, and records every object's content hash in an
 *   anchor-hash snapshot that the last page's watermark names.
 * - Delta import (deltaImport.ts) runs `deltaImportQuery` from the watermark and compares each row's hash with
 *   the snapshot; deletes are found by the configured detection (deletes.ts).
 * - Export (export.ts) runs `exportStatements` with `:name` parameters bound by the driver (each from the change,
 *   then its `state`, then `previous`), one transaction per batch; a batch with a row refused by a statement or at
 *   COMMIT is run again row by row, each in its own transaction; an add refused on its anchor returns the row.
 *   Batches share one connection until close() (PostgreSQL: pipelined, the batch's statements sent together).
 * - The connection test and the schema (connectionTest.ts) run every configured query without rows.
 *
 * Rows become objects in reading.ts; cursors, watermarks and delta marks are in marks.ts.
 */
export class SqlConnector {
  readonly type = 'sql';
  readonly config: ResolvedSqlConfig;
  /** The configuration, the snapshot store and the settings' fingerprint, handed to the imports. */
  private readonly parts: SqlParts;
  /** The connection the export batches share until close() (an export step's pages). */
  private readonly exporting: ExportConnection;

  constructor(config: SqlConfig, context: ConnectorContext = {}) {
    this.config = resolveSqlConfig(config, context);
    this.parts = { config: this.config, store: new SnapshotStore(this.config.stateDirectory), settingsPrint: settingsFingerprint(this.config) };
    this.exporting = new ExportConnection(this.config);
  }

  /** `SELECT <cols> FROM (<query>) src [WHERE ...] [ORDER BY ...]` in this connector's dialect (see session.ts). */
  private wrap(sql: string, what: string, select: string, tail: string): CompiledStatement {
    return wrap(this.config.dialect, sql, what, select, tail);
  }

  testConnection(): Promise<ConnectionTestResult> {
    return testConnection(this.config);
  }

  schema(): Promise<ConnectorSchema> {
    return schema(this.config);
  }

  async close(): Promise<void> {
    // The imports open and close their own sessions; the exports share one until now.
    await this.exporting.close();
  }

  fullImport(options: FullImportOptions): AsyncGenerator<ImportPage> {
    return fullImport(this.parts, options);
  }

  deltaImport(watermark: string | null, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    return deltaImport(this.parts, watermark, options);
  }

  async export(change: ExportChange, options?: ExportOptions): Promise<ExportResult> {
    return (await this.exportBatch([change], options))[0];
  }

  /**
   * One transaction for the batch. A row the database rejects, by a statement or at COMMIT (a deferred
   * constraint), rolls it back; the batch then runs again one row per transaction, in order, so the other rows
   * land and the rejected one is a per-object error naming it. Run-level failures (connection lost, bad
   * statement) throw. An abort of `options.signal` cancels the statement in flight: its transaction rolls back
   * and the batch throws `aborted` with the rows committed before.
   */
  exportBatch(changes: ExportChange[], options?: ExportOptions): Promise<ExportResult[]> {
    return exportBatch(this.config, changes, options?.signal, this.exporting);
  }
}
