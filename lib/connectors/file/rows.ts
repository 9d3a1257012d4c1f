import * as os from 'node:os';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import {
  ConnectorError,
  isAttributeValue,
  valuesOf,
  type AttributeValue,
  type ConnectorContext,
  type ConnectorObject,
  type ObjectError,
  type ReferenceTarget,
  type ScalarValue,
} from '../sdk';
import { formatCsvRow, type FileEncoding } from './csv';
import { compileFilePattern, type NameMatcher } from './files';
import { readFileRoots } from './roots';
import type { FileConnectorSettings } from './schema';

/** The settings with every default applied and derived values computed once. */
export interface FileConfig {
  folder: string;
  format: 'csv' | 'json';
  anchorColumn: string;
  objectType: string;
  delimiter: string;
  encoding: FileEncoding;
  multiValueSeparator: string;
  multiValueColumns: ReadonlySet<string>;
  references: ReadonlyMap<string, ReferenceTarget>;
  dnColumn?: string;
  containerColumn?: string;
  filePattern: string;
  fileMatcher: NameMatcher;
  exportFile: string;
  /** Where this connector's row-hash snapshots live. */
  stateDirectory: string;
  /** The `stateDirectory` setting as given (unset: the engine's own state folder, not subject to the roots). */
  stateSetting?: string;
  /** The folders every path of the connector must be inside (`Connectors:File:Roots`). */
  roots: readonly string[];
}

/** What the file connector takes besides its settings: `fileRoots` replaces the `Connectors:File:Roots` setting. */
export type FileConnectorContext = ConnectorContext & { fileRoots?: readonly string[] };

export function resolveConfig(settings: FileConnectorSettings, fallbackObjectType: string | undefined, context: FileConnectorContext = {}): FileConfig {
  if (!path.isAbsolute(settings.path)) {
    throw new ConnectorError('configuration_invalid', `The folder path must be absolute, not '${settings.path}'.`);
  }
  const format = settings.format ?? 'csv';
  const references = new Map<string, ReferenceTarget>();
  for (const [column, ref] of Object.entries(settings.referenceColumns ?? {})) {
    const target: ReferenceTarget =
      typeof ref === 'string' ? { objectType: ref, resolveBy: 'anchor' } : { objectType: ref.objectType, resolveBy: ref.resolveBy ?? 'anchor' };
    if (typeof ref !== 'string' && ref.attribute !== undefined) target.attribute = ref.attribute;
    if (target.resolveBy === 'attribute' && !target.attribute) {
      throw new ConnectorError('configuration_invalid', `referenceColumns.${column}: resolveBy "attribute" needs "attribute".`);
    }
    references.set(column, target);
  }
  const filePattern = settings.filePattern ?? (format === 'csv' ? '*.csv' : '*.json');
  const exportFile = settings.exportFile ?? (format === 'csv' ? 'export.csv' : 'export.json');
  // The schema says so too; repeated here because a connector can be made without the Admin API's validation.
  if (/[/\\\0]/.test(exportFile) || exportFile === '.' || exportFile === '..') {
    throw new ConnectorError('configuration_invalid', `exportFile must be a file name inside the folder, not '${exportFile}'.`);
  }
  // State is per connector: its id when the engine gives one, else a digest of what identifies the data.
  const key =
    context.connectorId ??
    createHash('sha256')
      .update(JSON.stringify([settings.path, settings.anchorColumn, filePattern]))
      .digest('hex')
      .slice(0, 24);
  const baseState = settings.stateDirectory ?? context.stateDirectory ?? path.join(os.tmpdir(), 'identity-sync-file-connector');
  return {
    folder: settings.path,
    format,
    anchorColumn: settings.anchorColumn,
    objectType: settings.objectType ?? fallbackObjectType ?? 'User',
    delimiter: settings.delimiter ?? ',',
    encoding: settings.encoding ?? 'utf8',
    multiValueSeparator: settings.multiValueSeparator ?? ';',
    multiValueColumns: new Set(settings.multiValueColumns ?? []),
    references,
    dnColumn: settings.dnColumn,
    containerColumn: settings.containerColumn,
    filePattern,
    fileMatcher: compileFilePattern(filePattern),
    exportFile,
    stateDirectory: path.join(baseState, key.replace(/[^A-Za-z0-9_.-]/g, '_')),
    stateSetting: settings.stateDirectory,
    roots: context.fileRoots ?? readFileRoots().folders,
  };
}

export type RowResult = { object: ConnectorObject } | { error: ObjectError };

/** Where a row is, for messages. */
export const locate = (file: string, line: number) => `${file}:${line}`;

/**
 * Checks a CSV header: no duplicate names, the anchor column present. Returns the trimmed names. The messages
 * give column positions, never the header's text: what a file holds is not quoted in run errors.
 */
export function checkHeader(fields: string[], cfg: FileConfig, file: string): string[] {
  const names = fields.map((f) => f.trim());
  const seen = new Map<string, number>();
  names.forEach((n, i) => {
    const first = seen.get(n);
    if (n !== '' && first !== undefined) {
      throw new ConnectorError('configuration_invalid', `${file}: the header names the same column twice (columns ${first + 1} and ${i + 1}).`);
    }
    seen.set(n, i);
  });
  if (!seen.has(cfg.anchorColumn)) {
    throw new ConnectorError('configuration_invalid', `${file}: the header has no column '${cfg.anchorColumn}' (the anchorColumn).`);
  }
  return names;
}

/** A CSV row as an object. Empty fields are null; multi-valued columns are split; references are marked. */
export function csvRowToObject(header: string[], fields: string[], cfg: FileConfig, file: string, line: number): RowResult {
  const anchorIdx = header.indexOf(cfg.anchorColumn);
  const anchorRaw = anchorIdx < fields.length ? fields[anchorIdx] : '';
  if (fields.length !== header.length) {
    // Trailing empty fields (a spreadsheet's extra delimiters) are harmless.
    const extraEmpty = fields.length > header.length && fields.slice(header.length).every((f) => f === '');
    if (!extraEmpty) {
      return {
        error: objectError(anchorRaw, cfg, `The row has ${fields.length} fields; the header has ${header.length}.`, locate(file, line)),
      };
    }
  }
  if (anchorRaw === '') return { error: objectError('', cfg, `The row has no value in the anchor column '${cfg.anchorColumn}'.`, locate(file, line)) };
  const attributes: Record<string, AttributeValue> = {};
  for (let i = 0; i < header.length; i++) {
    const name = header[i];
    if (name === '') continue;
    const raw = fields[i];
    if (cfg.multiValueColumns.has(name)) {
      attributes[name] = raw === '' ? [] : raw.split(cfg.multiValueSeparator).filter((v) => v !== '');
    } else {
      attributes[name] = raw === '' ? null : raw;
    }
  }
  return { object: finishObject(anchorRaw, attributes, cfg) };
}

/** A JSON record as an object: scalars and arrays of scalars only. */
export function jsonRecordToObject(value: unknown, cfg: FileConfig, file: string, line: number): RowResult {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { error: objectError('', cfg, 'A record must be a JSON object.', locate(file, line)) };
  }
  const rec = value as Record<string, unknown>;
  const anchorValue = Object.prototype.hasOwnProperty.call(rec, cfg.anchorColumn) ? rec[cfg.anchorColumn] : undefined;
  const anchor = typeof anchorValue === 'string' || typeof anchorValue === 'number' ? String(anchorValue) : '';
  if (anchor === '')
    return { error: objectError('', cfg, `The record has no string or number in '${cfg.anchorColumn}' (the anchorColumn).`, locate(file, line)) };
  const attributes: Record<string, AttributeValue> = {};
  for (const [name, v] of Object.entries(rec)) {
    if (!isAttributeValue(v)) {
      return { error: objectError(anchor, cfg, `The attribute '${name}' is not a string, number, boolean, null or an array of them.`, locate(file, line)) };
    }
    attributes[name] = cfg.multiValueColumns.has(name) && !Array.isArray(v) ? valuesOf(v) : v;
  }
  return { object: finishObject(anchor, attributes, cfg) };
}

function finishObject(anchor: string, attributes: Record<string, AttributeValue>, cfg: FileConfig): ConnectorObject {
  const o: ConnectorObject = { anchor, objectType: cfg.objectType, attributes };
  if (cfg.dnColumn) {
    const dn = attributes[cfg.dnColumn];
    if (typeof dn === 'string' && dn !== '') o.dn = dn;
  }
  if (cfg.containerColumn) {
    const c = attributes[cfg.containerColumn];
    if (c !== null && c !== undefined && !Array.isArray(c)) o.container = String(c);
  }
  if (cfg.references.size) {
    const refs: Record<string, string[]> = {};
    for (const column of cfg.references.keys()) {
      const vals = valuesOf(attributes[column])
        .map(String)
        .filter((v) => v !== '');
      if (vals.length) refs[column] = vals;
    }
    o.references = refs;
  }
  return o;
}

function objectError(anchor: string, cfg: FileConfig, message: string, location: string): ObjectError {
  const e: ObjectError = { code: 'object_error', objectType: cfg.objectType, message: `${location}: ${message}`, location, retriable: false };
  if (anchor !== '') e.anchor = anchor;
  return e;
}

/** One attribute value as CSV field text. */
export function csvFieldText(v: AttributeValue | undefined, cfg: FileConfig): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v))
    return v
      .filter((x) => x !== null)
      .map(String)
      .join(cfg.multiValueSeparator);
  return String(v);
}

export function csvLine(header: string[], attrs: Record<string, AttributeValue>, cfg: FileConfig): string {
  return formatCsvRow(
    header.map((h) => csvFieldText(attrs[h], cfg)),
    cfg.delimiter,
  );
}

/** Values of a multi-valued attribute after adds and removes (compared as strings: files hold text). */
export function applyMultiValue(current: AttributeValue | undefined, adds: ScalarValue[] | undefined, removes: ScalarValue[] | undefined): ScalarValue[] {
  const vals = valuesOf(current);
  const removeSet = new Set((removes ?? []).map(String));
  const out = vals.filter((v) => !removeSet.has(String(v)));
  const present = new Set(out.map(String));
  for (const a of adds ?? []) {
    if (a !== null && !present.has(String(a))) {
      out.push(a);
      present.add(String(a));
    }
  }
  return out;
}
