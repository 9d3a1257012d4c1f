import { fingerprintLanes, LANES } from './csv';

/**
 * A streaming reader for JSON files of records: either one JSON array of objects (`[{...}, {...}]`) or JSON
 * Lines (one object per line). It scans bytes for the boundaries of each top-level object (tracking strings and
 * nesting), then parses one object at a time, so a 100,000-record file never becomes one giant value in memory,
 * and every record knows its byte offsets (a page cursor can resume at one).
 *
 * A record that does not parse is yielded with `error` set; the reader goes on with the next one.
 */

export type JsonLayout = 'array' | 'lines';

export interface JsonRecord {
  /** The parsed value (undefined when `error` is set). */
  value?: unknown;
  line: number;
  start: number;
  end: number;
  /** Line number at `end` (where a reader resumes). */
  nextLine?: number;
  error?: string;
  /** The lanes of the record's fingerprint, with `fingerprintSeed` (`fingerprintText(h1, h2, end - start)`). */
  h1?: number;
  h2?: number;
  /** With `keyProperty`: the record, not parsed (`parseRecord` does it), is bytes [from, to) of `bytes`. */
  bytes?: Buffer;
  from?: number;
  to?: number;
  /**
   * With `keyProperty`: where the first top-level value of that property is in `bytes` (-1 when not found),
   * and whether it is a string without escapes (its text is then the bytes between the quotes).
   */
  keyFrom?: number;
  keyTo?: number;
  keyPlain?: boolean;
}

export interface JsonReadOptions {
  /** Known layout when resuming mid-file; otherwise detected from the first non-blank byte. */
  layout?: JsonLayout;
  startOffset?: number;
  startLine?: number;
  maxRecordBytes?: number;
  /** Fingerprint each record's bytes (`h1`, `h2`) with this seed. */
  fingerprintSeed?: number;
  /**
   * Lazy mode: records are not parsed, only the value of this property is located (a delta compares
   * fingerprints first, and parses the few records that changed).
   */
  keyProperty?: string;
}

const LF = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === LF || b === 0x0d;
}

/** Incremental scanner: `push` chunks, then `finish`. */
export class JsonRecordParser {
  private buf: Buffer = Buffer.alloc(0);
  private base: number;
  private line: number;
  layout: JsonLayout | undefined;
  private readonly maxRecordBytes: number;
  private readonly seed?: number;
  private readonly keyName?: Buffer;
  private readonly quotedName?: Buffer;
  /** Lazy mode: cached positions in buf (-2: not looked for since buf changed, -1: none left). */
  private backslashAt = -2;
  private nameAt = -2;
  /** Scan state of the record being read (it may span chunks). */
  private recStart = -1;
  private recLine = 0;
  private depth = 0;
  private inString = false;
  private escape = false;
  private scan = 0;
  private started: boolean;
  private ended = false;

  constructor(options: JsonReadOptions = {}) {
    this.layout = options.layout;
    this.base = options.startOffset ?? 0;
    this.line = options.startLine ?? 1;
    this.maxRecordBytes = options.maxRecordBytes ?? 16 * 1024 * 1024;
    this.seed = options.fingerprintSeed;
    if (options.keyProperty !== undefined) {
      this.keyName = Buffer.from(options.keyProperty, 'utf8');
      this.quotedName = Buffer.from(JSON.stringify(options.keyProperty), 'utf8');
    }
    this.started = this.layout !== undefined;
  }

  push(chunk: Buffer): JsonRecord[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    return this.drain(false);
  }

  finish(): JsonRecord[] {
    return this.drain(true);
  }

  private drain(eof: boolean): JsonRecord[] {
    const out: JsonRecord[] = [];
    this.backslashAt = this.nameAt = -2;
    const buf = this.buf;
    let i = this.scan;
    let keepFrom = buf.length;
    while (i < buf.length) {
      const b = buf[i];
      if (this.recStart >= 0) {
        // Inside a record: find where its outermost object closes.
        if (this.inString) {
          if (this.escape) this.escape = false;
          else if (b === BACKSLASH) this.escape = true;
          else if (b === QUOTE) this.inString = false;
          else if (b === LF) this.line++;
        } else if (b === QUOTE) this.inString = true;
        else if (b === OPEN_BRACE || b === OPEN_BRACKET) this.depth++;
        else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
          this.depth--;
          if (this.depth === 0) {
            out.push(this.record(buf, this.recStart, i + 1));
            this.recStart = -1;
          }
        } else if (b === LF) this.line++;
        i++;
        continue;
      }
      if (isSpace(b)) {
        if (b === LF) this.line++;
        i++;
        continue;
      }
      if (!this.started) {
        if (b === 0xef && i + 3 > buf.length && !eof) {
          // A byte order mark may be split across chunks: wait for the rest.
          keepFrom = i;
          break;
        }
        this.started = true;
        if (b === 0xef && buf[i + 1] === 0xbb && buf[i + 2] === 0xbf) {
          i += 3;
          this.started = false;
          continue;
        }
        this.layout = b === OPEN_BRACKET ? 'array' : 'lines';
        if (b === OPEN_BRACKET) {
          i++;
          continue;
        }
      }
      if (this.ended) {
        out.push({ line: this.line, start: this.base + i, end: this.base + buf.length, error: 'Unexpected content after the end of the JSON array.' });
        i = buf.length;
        break;
      }
      if (b === COMMA && this.layout === 'array') {
        i++;
        continue;
      }
      if (b === CLOSE_BRACKET && this.layout === 'array') {
        this.ended = true;
        i++;
        continue;
      }
      if (b === OPEN_BRACE) {
        this.recStart = i;
        this.recLine = this.line;
        this.depth = 1;
        this.inString = false;
        this.escape = false;
        i++;
        continue;
      }
      // Something other than an object where a record should start: report it up to the next separator.
      let k = i + 1;
      while (k < buf.length && buf[k] !== LF && buf[k] !== COMMA && buf[k] !== OPEN_BRACE) k++;
      if (k >= buf.length && !eof) {
        keepFrom = i;
        break;
      }
      out.push({ line: this.line, start: this.base + i, end: this.base + k, error: 'A record must be a JSON object.' });
      i = k;
    }
    if (this.recStart >= 0) {
      keepFrom = this.recStart;
      if (eof) {
        out.push({ line: this.recLine, start: this.base + this.recStart, end: this.base + buf.length, error: 'The JSON record is not closed.' });
        this.recStart = -1;
        keepFrom = buf.length;
      } else if (buf.length - this.recStart > this.maxRecordBytes) {
        out.push({
          line: this.recLine,
          start: this.base + this.recStart,
          end: this.base + buf.length,
          error: `The JSON record is longer than ${this.maxRecordBytes} bytes.`,
        });
        this.recStart = -1;
        keepFrom = buf.length;
      }
    }
    if (eof && this.layout === 'array' && !this.ended && out.every((r) => !r.error)) {
      out.push({ line: this.line, start: this.base + buf.length, end: this.base + buf.length, error: 'The JSON array is not closed.' });
    }
    // Keep only the unfinished record; rebase the saved positions on the kept bytes.
    const shift = Math.min(keepFrom, i);
    if (this.recStart >= 0) this.recStart -= shift;
    this.scan = i - shift;
    this.base += shift;
    this.buf = shift >= buf.length ? Buffer.alloc(0) : buf.subarray(shift);
    return out;
  }

  /** Lazy mode: the position of the next backslash in buf from `p` (cached: records are read in order). */
  private nextBackslash(buf: Buffer, p: number): number {
    if (this.backslashAt !== -1 && this.backslashAt < p) this.backslashAt = buf.indexOf(BACKSLASH, p);
    return this.backslashAt === -1 ? Infinity : this.backslashAt;
  }

  /** Lazy mode: the position of the next `"name"` in buf from `p` (cached likewise). */
  private nextName(buf: Buffer, p: number): number {
    if (this.nameAt !== -1 && this.nameAt < p) this.nameAt = buf.indexOf(this.quotedName!, p);
    return this.nameAt === -1 ? Infinity : this.nameAt;
  }

  private record(buf: Buffer, s: number, e: number): JsonRecord {
    const r: JsonRecord = { line: this.recLine, start: this.base + s, end: this.base + e, nextLine: this.line };
    if (this.seed !== undefined) {
      fingerprintLanes(this.seed, buf, s, e);
      r.h1 = LANES[0];
      r.h2 = LANES[1];
    }
    if (this.keyName) {
      r.bytes = buf;
      r.from = s;
      r.to = e;
      r.keyFrom = r.keyTo = -1;
      r.keyPlain = false;
      // Without a backslash, a property name is spelled only one way and a string ends at the next quote: the
      // first "name" is the property JSON.parse would read unless "name" appears again. Otherwise parse now.
      if (this.nextBackslash(buf, s) >= e) {
        const [from, to, plain] = findProperty(buf, s, e, this.keyName);
        if (from >= 0 && this.nextName(buf, to) >= e) {
          r.keyFrom = from;
          r.keyTo = to;
          r.keyPlain = plain;
          return r;
        }
      }
    }
    try {
      r.value = JSON.parse(buf.toString('utf8', s, e));
    } catch (err) {
      r.error = invalidJson(err);
    }
    return r;
  }
}

/**
 * What is wrong with a record, without the parser's own words: those can quote the record ("Unexpected token
 * 'r', "root:x:0:0"... is not valid JSON"), and what a file holds is not quoted in run errors.
 */
function invalidJson(err: unknown): string {
  const message = (err as Error).message ?? '';
  const at = /at position (\d+)/.exec(message);
  const where = at ? ` at character ${Number(at[1]) + 1} of the record` : '';
  if (/^Unexpected end/.test(message)) return 'Invalid JSON: the record ends too early.';
  if (/^Unterminated string/.test(message)) return `Invalid JSON: a string is not closed${where}.`;
  if (/^Unexpected token/.test(message)) return `Invalid JSON: an unexpected character${where}.`;
  return `Invalid JSON${where}.`;
}

/** A record's value: parsed now when the reader left it as bytes (lazy mode). */
export function parseRecord(r: JsonRecord): { value: unknown } | { error: string } {
  if (r.error) return { error: r.error };
  if (r.value !== undefined) return { value: r.value };
  try {
    return { value: JSON.parse(r.bytes!.toString('utf8', r.from, r.to)) };
  } catch (err) {
    return { error: invalidJson(err) };
  }
}

const NOT_FOUND: [number, number, boolean] = [-1, -1, false];

/**
 * Where the value of the first top-level property `name` (UTF-8, matched as written: a name spelled with escapes
 * is not found) of the object at [s, e) is: [from, to, is a string without escapes]. Finding it is only a
 * shortcut: a delta takes a record as unchanged only when its bytes hash the same as the row found.
 */
function findProperty(buf: Buffer, s: number, e: number, name: Buffer): [number, number, boolean] {
  let i = skipSpace(buf, s + 1, e);
  while (i < e && buf[i] === QUOTE) {
    const keyStart = i + 1;
    const [keyEnd, escaped] = stringEnd(buf, i, e);
    if (keyEnd < 0) return NOT_FOUND;
    const isName = !escaped && keyEnd - 1 - keyStart === name.length && sameBytes(buf, keyStart, name);
    i = skipSpace(buf, keyEnd, e);
    if (buf[i] !== COLON) return NOT_FOUND;
    const from = skipSpace(buf, i + 1, e);
    let to: number;
    let plain = false;
    if (buf[from] === QUOTE) {
      const [end, esc] = stringEnd(buf, from, e);
      if (end < 0) return NOT_FOUND;
      to = end;
      plain = !esc;
    } else if (buf[from] === OPEN_BRACE || buf[from] === OPEN_BRACKET) {
      to = nestedEnd(buf, from, e);
      if (to < 0) return NOT_FOUND;
    } else {
      to = from;
      while (to < e && buf[to] !== COMMA && buf[to] !== CLOSE_BRACE && !isSpace(buf[to])) to++;
    }
    if (isName) return [from, to, plain];
    i = skipSpace(buf, to, e);
    if (buf[i] !== COMMA) return NOT_FOUND;
    i = skipSpace(buf, i + 1, e);
  }
  return NOT_FOUND;
}

/** Whether `name` is at `at` in `buf`. */
function sameBytes(buf: Buffer, at: number, name: Buffer): boolean {
  for (let i = 0; i < name.length; i++) if (buf[at + i] !== name[i]) return false;
  return true;
}

function skipSpace(buf: Buffer, i: number, e: number): number {
  while (i < e && isSpace(buf[i])) i++;
  return i;
}

/** The end (after the closing quote; -1 when none) of the string at `i`, and whether it holds an escape. */
function stringEnd(buf: Buffer, i: number, e: number): [number, boolean] {
  let escaped = false;
  for (let k = i + 1; k < e; k++) {
    const b = buf[k];
    if (b === BACKSLASH) {
      escaped = true;
      k++;
    } else if (b === QUOTE) return [k + 1, escaped];
  }
  return [-1, escaped];
}

/** The end (after the closing bracket; -1 when none) of the object or array at `i`. */
function nestedEnd(buf: Buffer, i: number, e: number): number {
  let depth = 0;
  for (let k = i; k < e; k++) {
    const b = buf[k];
    if (b === QUOTE) {
      const [end] = stringEnd(buf, k, e);
      if (end < 0) return -1;
      k = end - 1;
    } else if (b === OPEN_BRACE || b === OPEN_BRACKET) depth++;
    else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
      if (--depth === 0) return k + 1;
    }
  }
  return -1;
}

/** Stream records, one array per chunk, with the layout found (known once the first byte is read). */
export async function* readJsonBatches(
  chunks: AsyncIterable<Buffer>,
  options: JsonReadOptions = {},
): AsyncGenerator<{ layout: JsonLayout; records: JsonRecord[] }> {
  const parser = new JsonRecordParser(options);
  for await (const chunk of chunks) {
    const records = parser.push(chunk);
    if (records.length) yield { layout: parser.layout ?? 'lines', records };
  }
  const rest = parser.finish();
  if (rest.length) yield { layout: parser.layout ?? 'lines', records: rest };
}

export async function* readJsonRecords(chunks: AsyncIterable<Buffer>, options: JsonReadOptions = {}): AsyncGenerator<JsonRecord & { layout: JsonLayout }> {
  for await (const b of readJsonBatches(chunks, options)) {
    for (const r of b.records) yield { ...r, layout: b.layout };
  }
}

export function parseJsonRecords(input: string | Buffer, options: JsonReadOptions = {}): JsonRecord[] {
  const parser = new JsonRecordParser(options);
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  return [...parser.push(buf), ...parser.finish()];
}
