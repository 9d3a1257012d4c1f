import { existsSync, renameSync } from 'node:fs';
import path from 'node:path';

/**
 * Moves a folder that a fixture makes once per test run (a cluster template, a certificate) into place. Suites
 * run in parallel workers, so another suite may have put its own folder there first. That one is then used, and
 * the caller removes `from`. `marker` is a file that a finished folder always holds.
 */
export function placeOnce(from: string, to: string, marker: string): void {
  try {
    renameSync(from, to);
  } catch (err) {
    if (!existsSync(path.join(to, marker))) throw err;
  }
}
