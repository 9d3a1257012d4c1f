import { constants, promises as fs } from 'node:fs';
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
 *
 * Snapshot files are only ever regular files this store wrote: every open refuses a link in their place (a
 * link planted in the state directory is never written or read through).
 */
export class SnapshotStore {
  /**
   * `label` names the directory in error messages (say `stateDirectory '/srv/state'`, as configured); without
   * one, messages say "the connector's state directory" and do not quote the engine's own path.
   */
  constructor(
    readonly dir: string,
    private readonly label?: string,
  ) {}

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
      await fs.writeFile(this.partial(id), '', { flag: 'wx' });
    } catch (err) {
      throw stateError(err, this.label);
    }
  }

  /** Append rows; returns the partial file's size after the write (for a cursor). */
  async append(id: string, rows: RowState[]): Promise<number> {
    try {
      if (rows.length) {
        await fs.appendFile(this.partial(id), rows.map(rowLine).join(''), { flag: APPEND });
      }
      return (await fs.stat(this.partial(id))).size;
    } catch (err) {
      throw stateError(err, this.label);
    }
  }

  /** Resume a partial snapshot at `size` bytes; returns the anchors it holds, or undefined when it is gone. */
  async resume(id: string, size: number): Promise<Set<string> | undefined> {
    try {
      const fh = await fs.open(this.partial(id), constants.O_RDWR | NOFOLLOW);
      try {
        if ((await fh.stat()).size < size) return undefined;
        await fh.truncate(size);
      } finally {
        await fh.close();
      }
    } catch {
      return undefined;
    }
    const anchors = new Set<string>();
    for (const r of parseRows(await fs.readFile(this.partial(id), { encoding: 'utf8', flag: READ }))) anchors.add(r.anchor);
    return anchors;
  }

  async finish(id: string): Promise<void> {
    try {
      await fs.rename(this.partial(id), this.complete(id));
    } catch (err) {
      throw stateError(err, this.label);
    }
  }

  /** Append lines built for this snapshot (a delta's: mostly lines copied from the previous snapshot). */
  async appendLines(id: string, lines: SnapshotLines): Promise<void> {
    const parts = lines.take();
    if (!parts.length) return;
    try {
      await fs.appendFile(this.partial(id), parts.length === 1 ? parts[0] : Buffer.concat(parts), { flag: APPEND });
    } catch (err) {
      throw stateError(err, this.label);
    }
  }

  /** A completed snapshot, or undefined when it does not exist (any more). */
  async load(id: string): Promise<Snapshot | undefined> {
    let text: Buffer;
    try {
      text = await fs.readFile(this.complete(id), { flag: READ });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw stateError(err, this.label);
    }
    return new Snapshot(text);
  }

  /** A completed snapshot's live rows by anchor (for a connector that updates it row by row), or undefined. */
  async loadRows(id: string): Promise<Map<string, RowState> | undefined> {
    const snap = await this.load(id);
    if (!snap) return undefined;
    const rows = new Map<string, RowState>();
    for (let i = 0; i < snap.count; i++) {
      if (!snap.isLive(i)) continue;
      const r = snap.row(i);
      rows.set(r.anchor, r);
    }
    return rows;
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

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | NOFOLLOW;
const READ = constants.O_RDONLY | NOFOLLOW;

const TAB = 0x09;
const LF = 0x0a;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const DOT = 0x2e;
const CR = 0x0d;

/**
 * A completed snapshot as a delta reads it: the file's bytes, indexed by anchor. A row stays a line of bytes
 * (its hash as numbers beside it) until it is asked for: a delta compares 100,000 hashes and copies the lines
 * of unchanged rows into the next snapshot as they are, and looks at few rows any closer.
 *
 * The anchor index hashes an anchor's stored bytes (its UTF-8, as no escape is needed in most anchors) into an
 * open-addressing table, so looking up a CSV row's anchor needs neither a string nor a Map entry. Anchors stored
 * with escapes (a backslash, tab, CR or LF in them) are kept by value in a small Map instead.
 */
export class Snapshot {
  /** Rows in file order (a row whose anchor appears again later is not live: the later one counts). */
  readonly count: number;
  private readonly live: Uint8Array;
  private readonly lineStart: Float64Array;
  private readonly lineEnd: Float64Array;
  /** Anchor bytes are [lineStart, anchorEnd). */
  private readonly anchorEnd: Float64Array;
  private readonly anchorHash: Int32Array;
  /** Row index + 1 by anchor hash (0: empty slot). */
  private readonly table: Int32Array;
  private readonly mask: number;
  private readonly escaped = new Map<string, number>();
  /** The hash `PREFIX:h1.h2.length` (CSV: the prefix stands for the header) as a prefix id and numbers. */
  private readonly prefix: Int32Array;
  private readonly h1: Int32Array;
  private readonly h2: Int32Array;
  private readonly length: Float64Array;
  private readonly prefixIds = new Map<string, number>();
  private readonly prefixTexts: string[] = [];
  /** The file of each row, as an index into `files`. */
  private readonly fileOf: Int32Array;
  private readonly files: string[] = [];
  private readonly fileIds = new Map<string, number>();
  private byFile?: number[][];
  private scratch = Buffer.allocUnsafe(256);

  constructor(private readonly text: Buffer) {
    let lines = 0;
    for (let p = text.indexOf(LF); p >= 0; p = text.indexOf(LF, p + 1)) lines++;
    if (text.length && text[text.length - 1] !== LF) lines++;
    this.live = new Uint8Array(lines);
    this.lineStart = new Float64Array(lines);
    this.lineEnd = new Float64Array(lines);
    this.anchorEnd = new Float64Array(lines);
    this.anchorHash = new Int32Array(lines);
    let size = 16;
    while (size < lines * 2) size *= 2;
    this.table = new Int32Array(size);
    this.mask = size - 1;
    this.prefix = new Int32Array(lines);
    this.h1 = new Int32Array(lines);
    this.h2 = new Int32Array(lines);
    this.length = new Float64Array(lines);
    this.fileOf = new Int32Array(lines);
    // One small method per step (not one long loop here): each is optimized with the feedback of every row.
    for (let p = 0; p < text.length;) p = this.readLine(p);
    this.count = this.rows;
  }

  /** Reading state: rows read, tab positions of the current line, the last prefix and file read from bytes. */
  private rows = 0;
  private readonly tabs = new Int32Array(4);
  private readonly numbers = new Float64Array(3);
  private lastPrefix = -1;
  private lastPrefixStart = 0;
  private lastPrefixEnd = 0;
  private lastFile = -1;
  private lastFileStart = 0;
  private lastFileEnd = 0;

  /** Read the line at `p`; returns where the next one starts. */
  private readLine(p: number): number {
    const text = this.text;
    const tabs = this.tabs;
    let e = p;
    let t = 0;
    let escaped = false;
    let h = FNV_SEED;
    for (; e < text.length; e++) {
      const b = text[e];
      if (b === LF) break;
      if (b === TAB) {
        if (t < 4) tabs[t] = e;
        t++;
      } else if (t === 0) {
        if (b === BACKSLASH) escaped = true;
        h = Math.imul(h ^ b, FNV_PRIME);
      }
    }
    if (e === p) return e + 1;
    const n = this.rows++;
    // A line from another writer would have five fields; one without a hash is kept but never matched.
    const aEnd = t > 0 ? tabs[0] : e;
    this.lineStart[n] = p;
    this.lineEnd[n] = e;
    this.anchorEnd[n] = aEnd;
    this.anchorHash[n] = h;
    this.prefix[n] = -2;
    if (t >= 2) this.readHash(n, tabs[0] + 1, tabs[1]);
    this.readFile(n, t >= 2 ? tabs[1] + 1 : e, t >= 3 ? tabs[2] : e);
    this.live[n] = 1;
    if (escaped) this.insertEscaped(n, unesc(text.toString('utf8', p, aEnd))!);
    else this.insert(n, h);
    return e + 1;
  }

  /** The hash [hs, he): an optional prefix up to ':', then three base-36 numbers separated by '.'. */
  private readHash(n: number, hs: number, he: number): void {
    const text = this.text;
    let c = hs;
    while (c < he && text[c] !== COLON) c++;
    let from = hs;
    let pfx: number;
    if (c < he) {
      from = c + 1;
      pfx = this.lastPrefix >= 0 && sameBytes(text, this.lastPrefixStart, this.lastPrefixEnd, text, hs, from) ? this.lastPrefix : this.newPrefix(hs, from);
    } else pfx = this.prefixIdOf('', true);
    const v = this.numbers;
    v[0] = v[1] = v[2] = 0;
    let k = 0;
    for (let i = from; i < he; i++) {
      const b = text[i];
      if (b === DOT) {
        if (++k > 2) return;
      } else if (b >= 0x30 && b <= 0x39) v[k] = v[k] * 36 + b - 0x30;
      else if (b >= 0x61 && b <= 0x7a) v[k] = v[k] * 36 + b - 0x61 + 10;
      else return;
    }
    if (k !== 2) return;
    this.prefix[n] = pfx;
    this.h1[n] = v[0] | 0;
    this.h2[n] = v[1] | 0;
    this.length[n] = v[2];
  }

  private newPrefix(start: number, end: number): number {
    this.lastPrefixStart = start;
    this.lastPrefixEnd = end;
    return (this.lastPrefix = this.prefixIdOf(this.text.toString('latin1', start, end), true));
  }

  /** The file [start, end): most rows name the same one as the row before. */
  private readFile(n: number, start: number, end: number): void {
    if (this.lastFile >= 0 && sameBytes(this.text, this.lastFileStart, this.lastFileEnd, this.text, start, end)) {
      this.fileOf[n] = this.lastFile;
      return;
    }
    const name = unesc(this.text.toString('utf8', start, end)) ?? '';
    let id = this.fileIds.get(name);
    if (id === undefined) {
      id = this.files.length;
      this.files.push(name);
      this.fileIds.set(name, id);
    }
    this.fileOf[n] = this.lastFile = id;
    this.lastFileStart = start;
    this.lastFileEnd = end;
  }

  private insertEscaped(i: number, anchor: string): void {
    const before = this.escaped.get(anchor);
    if (before !== undefined) this.live[before] = 0;
    this.escaped.set(anchor, i);
  }

  /** Index row `i` by its anchor's hash `h`; an earlier row with the same anchor stops being live. */
  private insert(i: number, h: number): void {
    const text = this.text;
    for (let slot = h & this.mask; ; slot = (slot + 1) & this.mask) {
      const r = this.table[slot] - 1;
      if (r < 0) {
        this.table[slot] = i + 1;
        return;
      }
      if (this.anchorHash[r] === h && sameBytes(text, this.lineStart[r], this.anchorEnd[r], text, this.lineStart[i], this.anchorEnd[i])) {
        this.table[slot] = i + 1;
        this.live[r] = 0;
        return;
      }
    }
  }

  /** The live row whose anchor is `bytes[start, end)`: UTF-8 without a backslash, tab, CR or LF. -1 when none. */
  private findBytes(bytes: Uint8Array, start: number, end: number, h: number): number {
    const text = this.text;
    for (let slot = h & this.mask; ; slot = (slot + 1) & this.mask) {
      const r = this.table[slot] - 1;
      if (r < 0) return -1;
      if (this.anchorHash[r] === h && sameBytes(text, this.lineStart[r], this.anchorEnd[r], bytes, start, end)) return r;
    }
  }

  /** The live row with this anchor, -1 when none. */
  find(anchor: string): number {
    if (/[\\\t\n\r]/.test(anchor)) return this.escaped.get(anchor) ?? -1;
    if (this.scratch.length < anchor.length * 3) this.scratch = Buffer.allocUnsafe(anchor.length * 3);
    const n = this.scratch.write(anchor, 0, 'utf8');
    let h = FNV_SEED;
    for (let i = 0; i < n; i++) h = Math.imul(h ^ this.scratch[i], FNV_PRIME);
    return this.findBytes(this.scratch, 0, n, h);
  }

  /**
   * The live row whose anchor is the text of `bytes[start, end)`, -1 when none. Plain ASCII is looked up as it is;
   * any other text is decoded first (with `decode`: the bytes may be in another encoding, or not valid UTF-8).
   * `guess` is the row it likely is (the one after the last row found: files mostly keep their order), which
   * spares a probe of the table.
   */
  findText(bytes: Uint8Array, start: number, end: number, decode: (bytes: Buffer, start: number, end: number) => string, guess = -1): number {
    let h = FNV_SEED;
    for (let i = start; i < end; i++) {
      const b = bytes[i];
      if (b >= 0x80 || b === BACKSLASH || b === TAB || b === LF || b === CR) return this.find(decode(bytes as Buffer, start, end));
      h = Math.imul(h ^ b, FNV_PRIME);
    }
    // Plain ASCII equal to a stored anchor is that anchor (stored anchors are UTF-8, escaped ones hold a backslash).
    if (guess >= 0 && guess < this.count && this.live[guess] && sameBytes(this.text, this.lineStart[guess], this.anchorEnd[guess], bytes, start, end))
      return guess;
    return this.findBytes(bytes, start, end, h);
  }

  private prefixIdOf(text: string, add: boolean): number {
    let id = this.prefixIds.get(text);
    if (id === undefined && add) {
      id = this.prefixTexts.length;
      this.prefixTexts.push(text);
      this.prefixIds.set(text, id);
    }
    return id ?? -1;
  }

  /** The id of a hash prefix (a CSV header's, colon included; '' for none) for `sameHash`; -1 when no row has it. */
  prefixId(text: string): number {
    return this.prefixIdOf(text, false);
  }

  /** Whether row `i` has the hash `prefix + fingerprintText(h1, h2, length)`. */
  sameHash(i: number, prefix: number, h1: number, h2: number, length: number): boolean {
    return this.prefix[i] === prefix && this.h1[i] === (h1 | 0) && this.h2[i] === (h2 | 0) && this.length[i] === length;
  }

  isLive(i: number): boolean {
    return this.live[i] === 1;
  }

  /** The id of a file's name (-1 when no row is in it), to compare with `fileIdOf`. */
  fileId(name: string): number {
    return this.fileIds.get(name) ?? -1;
  }

  fileIdOf(i: number): number {
    return this.fileOf[i];
  }

  /** The live rows of a file, in order. */
  rowsOf(name: string): number[] {
    if (!this.byFile) {
      this.byFile = this.files.map(() => []);
      for (let i = 0; i < this.count; i++) if (this.live[i]) this.byFile[this.fileOf[i]].push(i);
    }
    const id = this.fileIds.get(name);
    return id === undefined ? [] : this.byFile[id];
  }

  /** Row `i` decoded. */
  row(i: number): RowState {
    const [anchor, hash, file, dn, container] = this.text.toString('utf8', this.lineStart[i], this.lineEnd[i]).split('\t');
    return { anchor: unesc(anchor)!, hash: unesc(hash)!, file: unesc(file)!, dn: unesc(dn), container: unesc(container) };
  }

  /** The snapshot's bytes; row `i`'s line is [lineFrom(i), lineTo(i)), line break included. */
  get bytes(): Buffer {
    return this.text;
  }

  lineFrom(i: number): number {
    return this.lineStart[i];
  }

  lineTo(i: number): number {
    return Math.min(this.lineEnd[i] + 1, this.text.length);
  }
}

const FNV_SEED = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;

/**
 * The lines of a snapshot being written, in order: lines of an older snapshot copied byte for byte (adjacent
 * ones as one range), and new rows.
 */
export class SnapshotLines {
  private parts: Buffer[] = [];
  private src?: Buffer;
  private runStart = 0;
  private runEnd = 0;
  private text = '';

  /** Copy row `i` of `from` as it is. */
  copy(from: Snapshot, i: number): void {
    const buf = from.bytes;
    const s = from.lineFrom(i);
    const e = from.lineTo(i);
    if (buf === this.src && s === this.runEnd) {
      this.runEnd = e;
      return;
    }
    this.closeRun();
    this.closeText();
    this.src = buf;
    this.runStart = s;
    this.runEnd = e;
    // A last line without a line break (not written by this store) gets one.
    if (buf[e - 1] !== LF) {
      this.closeRun();
      this.text = '\n';
    }
  }

  add(r: RowState): void {
    this.closeRun();
    this.text += rowLine(r);
  }

  /** The bytes so far, as buffers to write in order; starts afresh. */
  take(): Buffer[] {
    this.closeRun();
    this.closeText();
    const out = this.parts;
    this.parts = [];
    return out;
  }

  private closeRun(): void {
    if (this.src && this.runEnd > this.runStart) this.parts.push(this.src.subarray(this.runStart, this.runEnd));
    this.src = undefined;
    this.runStart = this.runEnd = 0;
  }

  private closeText(): void {
    if (this.text) this.parts.push(Buffer.from(this.text, 'utf8'));
    this.text = '';
  }
}

/** Whether bytes [a, aEnd) of `x` and [b, bEnd) of `y` are the same. */
function sameBytes(x: Uint8Array, a: number, aEnd: number, y: Uint8Array, b: number, bEnd: number): boolean {
  if (aEnd - a !== bEnd - b) return false;
  for (let i = 0; i < aEnd - a; i++) if (x[a + i] !== y[b + i]) return false;
  return true;
}

function rowLine(r: RowState): string {
  return esc(r.anchor) + '\t' + esc(r.hash) + '\t' + esc(r.file) + '\t' + esc(r.dn) + '\t' + esc(r.container) + '\n';
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

function stateError(err: unknown, label: string | undefined): ConnectorError {
  const code = (err as NodeJS.ErrnoException).code;
  const what = label ?? "the connector's state directory";
  const why = code === 'ELOOP' ? ' (a symbolic link where a state file belongs)' : code ? ` (${code})` : '';
  return new ConnectorError('configuration_invalid', `Cannot use ${what}${why}.`, { cause: err });
}
