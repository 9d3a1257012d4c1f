import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ConnectorError } from '../sdk';

/** What the connector remembers about one row between runs. */
export interface RowState {
  anchor: string;
  hash: string;
  /** The file the row was in: a file that did not change is not re-read, its rows are carried over. */
  file: string;
  dn: string | null;
  container: string | null;
}

/**
 * Row-hash snapshots of the file connector, one per completed import, in the connector's state directory.
 * A watermark names a snapshot by id (the watermark itself stays small). A snapshot is written as it is built
 * (`<id>.partial`, JSON Lines, appended page by page, so a resumed full import truncates it back to the length
 * its cursor recorded) and renamed to `<id>.rows` when complete.
 *
 * A snapshot must outlive the run that made it until the engine has committed that run and starts a delta from
 * it: `pruneExcept` runs at the start of a delta import (the watermark it got is the committed one).
 */
export class SnapshotStore {
  constructor(readonly dir: string) {}

  /** Time-ordered ids, so the newest snapshots sort last. */
  newId(): string {
    return Date.now().toString(36).padStart(10, '0') + '-' + randomBytes(6).toString('hex');
  }

  static isId(id: unknown): id is string {
    return typeof id === 'string' && /^[0-9a-z]{10}-[0-9a-f]{12}$/.test(id);
  }

  private partial(id: string): string {
    return path.join(this.dir, `${id}.partial`);
  }

  private complete(id: string): string {
    return path.join(this.dir, `${id}.rows`);
  }

  async begin(id: string): Promise<void> {
    try {
      await fs.mkdir(this.dir, { recursive: true });
      await fs.writeFile(this.partial(id), '');
    } catch (err) {
      throw stateError(err, this.dir);
    }
  }

  /** Append rows; returns the partial file's size after the write (for a cursor). */
  async append(id: string, rows: RowState[]): Promise<number> {
    try {
      if (rows.length) {
        const text = rows.map((r) => esc(r.anchor) + '\t' + esc(r.hash) + '\t' + esc(r.file) + '\t' + esc(r.dn) + '\t' + esc(r.container)).join('\n') + '\n';
        await fs.appendFile(this.partial(id), text);
      }
      return (await fs.stat(this.partial(id))).size;
    } catch (err) {
      throw stateError(err, this.dir);
    }
  }

  /** Resume a partial snapshot at `size` bytes; returns the anchors it holds, or undefined when it is gone. */
  async resume(id: string, size: number): Promise<Set<string> | undefined> {
    try {
      const st = await fs.stat(this.partial(id));
      if (st.size < size) return undefined;
      await fs.truncate(this.partial(id), size);
    } catch {
      return undefined;
    }
    const anchors = new Set<string>();
    for (const r of parseRows(await fs.readFile(this.partial(id), 'utf8'))) anchors.add(r.anchor);
    return anchors;
  }

  async finish(id: string): Promise<void> {
    try {
      await fs.rename(this.partial(id), this.complete(id));
    } catch (err) {
      throw stateError(err, this.dir);
    }
  }

  /** A completed snapshot by anchor, or undefined when it does not exist (any more). */
  async load(id: string): Promise<Map<string, RowState> | undefined> {
    let text: string;
    try {
      text = await fs.readFile(this.complete(id), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw stateError(err, this.dir);
    }
    const map = new Map<string, RowState>();
    for (const r of parseRows(text)) map.set(r.anchor, r);
    return map;
  }

  /** Remove every snapshot but these. */
  async pruneExcept(keep: string[]): Promise<void> {
    const names = await this.names();
    const keepSet = new Set(keep);
    await Promise.all(names.filter((n) => !keepSet.has(n.replace(/\.(partial|rows)$/, ''))).map((n) => fs.rm(path.join(this.dir, n), { force: true })));
  }

  /** Remove all but the newest `keepComplete` completed snapshots and every partial one but `current`. */
  async pruneOld(current: string, keepComplete: number): Promise<void> {
    const names = await this.names();
    const complete = names.filter((n) => n.endsWith('.rows')).sort();
    const keep = new Set([current, ...complete.slice(-keepComplete).map((n) => n.slice(0, -'.rows'.length))]);
    await this.pruneExcept([...keep]);
  }

  private async names(): Promise<string[]> {
    try {
      return (await fs.readdir(this.dir)).filter((n) => /\.(partial|rows)$/.test(n) && SnapshotStore.isId(n.replace(/\.(partial|rows)$/, '')));
    } catch {
      return [];
    }
  }
}

function parseRows(text: string): RowState[] {
  const out: RowState[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [anchor, hash, file, dn, container] = line.split('\t');
    out.push({ anchor: unesc(anchor)!, hash: unesc(hash)!, file: unesc(file)!, dn: unesc(dn), container: unesc(container) });
  }
  return out;
}

/**
 * Snapshot lines are tab-separated (several times faster to read back than JSON per line, and a delta reads
 * 100,000 of them): a backslash, tab, CR or LF in a value is escaped, and `\N` stands for null.
 */
function esc(v: string | null): string {
  if (v === null) return '\\N';
  return /[\\\t\n\r]/.test(v) ? v.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]) : v;
}

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const UNESCAPES: Record<string, string> = { '\\': '\\', t: '\t', n: '\n', r: '\r' };

function unesc(v: string | undefined): string | null {
  if (v === undefined || v === '\\N') return null;
  return v.includes('\\') ? v.replace(/\\(.)/g, (_, c: string) => UNESCAPES[c] ?? c) : v;
}

function stateError(err: unknown, dir: string): ConnectorError {
  const code = (err as NodeJS.ErrnoException).code;
  return new ConnectorError('configuration_invalid', `Cannot write the connector's state directory '${dir}'${code ? ` (${code})` : ''}.`, { cause: err });
}
