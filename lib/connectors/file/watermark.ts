import { createHash } from 'node:crypto';
import type { FileStat } from './files';
import type { FileConfig } from './rows';
import { SnapshotStore } from './state';

/** A delta watermark: the snapshot of row hashes it covers and the files as they were then. */
export interface Watermark {
  v: 1;
  snap: string;
  files: FileStat[];
  /** Fingerprint of the settings that shape objects: a delta across a settings change needs a full import. */
  cfg: string;
}

/**
 * A fingerprint of the settings that shape objects (format, columns, encoding, separators, references): a
 * watermark carries it, and a delta across a change of any of them needs a full import.
 */
export function settingsFingerprint(c: FileConfig): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        c.format,
        c.anchorColumn,
        c.objectType,
        c.delimiter,
        c.encoding,
        c.multiValueSeparator,
        [...c.multiValueColumns].sort(),
        [...c.references].sort(),
        c.dnColumn ?? null,
        c.containerColumn ?? null,
      ]),
    )
    .digest('base64url')
    .slice(0, 16);
}

/** A watermark this connector wrote, or undefined for any other text. */
export function parseWatermark(text: string): Watermark | undefined {
  try {
    const w = JSON.parse(text) as Partial<Watermark>;
    if (w?.v === 1 && SnapshotStore.isId(w.snap) && Array.isArray(w.files) && typeof w.cfg === 'string') return w as Watermark;
  } catch {
    // Not ours: answered as "full import required".
  }
  return undefined;
}
