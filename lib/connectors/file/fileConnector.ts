import type { ConnectionTestResult, ConnectorSchema, DeltaImportOptions, DeltaPage, ExportChange, ExportResult, FullImportOptions, ImportPage } from '../sdk';
import { FileGuard } from './access';
import { deltaImport } from './deltaImport';
import { exportBatch } from './export';
import { fullImport } from './fullImport';
import { columnNames, schema, testConnection } from './inspect';
import type { FileParts } from './reading';
import type { FileConfig } from './rows';
import { SnapshotStore } from './state';
import { settingsFingerprint } from './watermark';

/**
 * The file connector: a folder of CSV or JSON files as one source of objects (see docs/connectors.md). A thin
 * façade over its jobs, each in its own file:
 *
 * - Full import (fullImport.ts) streams every matching file, page by page; the page cursor is a byte offset, so
 *   a resumed import reads on from there. It also records a hash per row (a snapshot in the state directory)
 *   that the last page's watermark names.
 * - Delta import (deltaImport.ts) re-reads only the files whose size or modification time changed, compares
 *   each row's hash with the snapshot, and reports adds, updates, renames (DN/container column changed) and
 *   deletes.
 * - Export (export.ts) rewrites the export file (temporary file + rename) with the changes applied.
 * - The connection test and the schema (inspect.ts) read the headers of the files.
 *
 * Reading rows, shared by them all, is in reading.ts; watermarks in watermark.ts.
 */
export class FileConnector {
  readonly type = 'custom';
  readonly implementation = 'file';
  /** The settings, the snapshot store, the roots guard and the settings' fingerprint, handed to each job. */
  private readonly parts: FileParts;

  constructor(readonly config: FileConfig) {
    this.parts = {
      config,
      store: new SnapshotStore(config.stateDirectory, config.stateSetting === undefined ? undefined : `stateDirectory '${config.stateSetting}'`),
      guard: new FileGuard(config),
      settingsPrint: settingsFingerprint(config),
    };
  }

  testConnection(): Promise<ConnectionTestResult> {
    return testConnection(this.parts);
  }

  schema(): Promise<ConnectorSchema> {
    return schema(this.parts);
  }

  /** The column names of the files (null when no file matches yet): what rules may name on this side. */
  columnNames(): Promise<string[] | null> {
    return columnNames(this.parts);
  }

  async close(): Promise<void> {
    // Nothing stays open between calls.
  }

  fullImport(options: FullImportOptions): AsyncGenerator<ImportPage> {
    return fullImport(this.parts, options);
  }

  deltaImport(watermark: string | null, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    return deltaImport(this.parts, watermark, options);
  }

  async export(change: ExportChange): Promise<ExportResult> {
    return (await this.exportBatch([change]))[0];
  }

  /**
   * Apply the changes to the export file in one rewrite: existing rows are copied (changed ones rewritten,
   * deleted ones dropped, unreadable ones copied verbatim), new rows appended, then the file is replaced
   * atomically. Changes to the same anchor apply in order.
   */
  exportBatch(changes: ExportChange[]): Promise<ExportResult[]> {
    return exportBatch(this.parts, changes);
  }
}
