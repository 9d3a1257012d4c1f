import { readdirSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import type { FieldError } from '../../core/errors';
import { ConnectorError } from '../sdk';
import { compileFilePattern, filePatternProblem, type FileStat, type NameMatcher } from './files';
import { checkPath, checkPathSync, describePathProblem, openInside, type PathProblem } from './roots';
import type { FileConnectorSettings } from './schema';

/**
 * Where a file connector may go, checked against the file roots (lib/connectors/file/roots.ts) with messages
 * that name the settings field at fault and the path as the admin wrote it: never where a link leads, never
 * anything read from a file.
 */

/**
 * The save-time check of validated settings (paths relative to `config.settings`): the folder, the files it
 * holds now that the connector would read, the export file and a configured `stateDirectory` must all be
 * inside a root once links are resolved.
 */
export function checkFileSettings(settings: FileConnectorSettings, roots: readonly string[]): FieldError[] {
  const errors: FieldError[] = [];
  const tooComplex = settings.filePattern === undefined ? undefined : filePatternProblem(settings.filePattern);
  if (tooComplex) errors.push({ path: '/filePattern', message: tooComplex });
  const folder = checkPathSync(settings.path, roots);
  if ('problem' in folder) {
    errors.push({ path: '/path', message: describePathProblem(folder.problem) });
  } else {
    const format = settings.format ?? 'csv';
    const pattern = compileFilePattern(settings.filePattern ?? (format === 'csv' ? '*.csv' : '*.json'));
    const exportFile = settings.exportFile ?? (format === 'csv' ? 'export.csv' : 'export.json');
    // The export file is reported under its own field (it is read too when the pattern matches it).
    const outside = readableNames(folder.real, pattern).find(
      (name) => name !== exportFile && 'problem' in checkPathSync(path.join(settings.path, name), roots),
    );
    if (outside !== undefined) {
      errors.push({ path: '/path', message: `holds the file '${outside}', which ${describePathProblem('outside')}` });
    }
    const target = checkPathSync(path.join(settings.path, exportFile), roots);
    if ('problem' in target) errors.push({ path: '/exportFile', message: describePathProblem(target.problem) });
  }
  if (settings.stateDirectory !== undefined) {
    const state = checkPathSync(settings.stateDirectory, roots);
    if ('problem' in state) errors.push({ path: '/stateDirectory', message: describePathProblem(state.problem) });
  }
  return errors;
}

/** The names of the folder a run would read (as `listFiles` picks them); none when it cannot be listed yet. */
function readableNames(folder: string, pattern: NameMatcher): string[] {
  try {
    return readdirSync(folder, { withFileTypes: true })
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && !e.name.startsWith('.') && pattern.test(e.name))
      .map((e) => e.name);
  } catch {
    return [];
  }
}

/** What the run-time checks need from the connector's resolved settings. */
export interface GuardedPaths {
  folder: string;
  exportFile: string;
  roots: readonly string[];
  stateDirectory: string;
  /** The `stateDirectory` setting as given, when the settings gave one (the engine's own folder is not checked). */
  stateSetting?: string;
}

/**
 * The run-time checks, made each time a run uses a path (a link may have been swapped in after the save).
 * A refusal is a `configuration_invalid` ConnectorError: the run fails before reading or writing that path.
 */
export class FileGuard {
  constructor(private readonly p: GuardedPaths) {}

  private refuse(field: string, what: string, problem: PathProblem): ConnectorError {
    return new ConnectorError('configuration_invalid', `${field}: ${what} ${describePathProblem(problem)}; it is not used.`);
  }

  async folder(): Promise<void> {
    const c = await checkPath(this.p.folder, this.p.roots);
    if ('problem' in c) throw this.refuse('path', `the folder '${this.p.folder}'`, c.problem);
  }

  /** Every file a run is about to read: one outside the roots fails the run before anything is read. */
  async files(files: readonly FileStat[]): Promise<void> {
    for (const f of files) {
      const c = await checkPath(path.join(this.p.folder, f.name), this.p.roots);
      if ('problem' in c) throw this.refuse('path', `the file '${f.name}' of the folder`, c.problem);
    }
  }

  /** Open a file of the folder for reading (checked again as it is opened). */
  async open(name: string): Promise<FileHandle> {
    const fh = await openInside(path.join(this.p.folder, name), this.p.roots);
    if (typeof fh === 'string') throw this.refuse(name === this.p.exportFile ? 'exportFile' : 'path', `the file '${name}' of the folder`, fh);
    return fh;
  }

  async exportTarget(): Promise<void> {
    const c = await checkPath(path.join(this.p.folder, this.p.exportFile), this.p.roots);
    if ('problem' in c) throw this.refuse('exportFile', `'${this.p.exportFile}'`, c.problem);
  }

  async stateDirectory(): Promise<void> {
    if (this.p.stateSetting === undefined) return;
    const c = await checkPath(this.p.stateDirectory, this.p.roots);
    if ('problem' in c) throw this.refuse('stateDirectory', `'${this.p.stateSetting}'`, c.problem);
  }
}
