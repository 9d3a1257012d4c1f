/**
 * A streaming CSV reader (RFC 4180 plus what real HR exports do): quoted fields with `""` escapes, delimiters and
 * line breaks inside quotes, CRLF or LF line ends, a UTF-8 byte order mark. It works on bytes, not text, so every
 * record knows its exact byte offsets: a full import can persist "resume at byte N" as its page cursor.
 *
 * Working on bytes is sound because the structural characters (delimiter, quote, CR, LF) are ASCII and the
 * supported encodings (UTF-8, Latin-1, Windows-1252) are ASCII-compatible: no multi-byte character contains
 * one of those bytes.
 *
 * A malformed record (text after a closing quote, an unterminated quote) does not stop the reader: it yields the
 * record with `error` set and goes on at the next line, so one bad row costs one per-object error.
 */

export type FileEncoding = 'utf8' | 'latin1' | 'windows-1252';

export interface CsvRecord {
  fields: string[];
  /** 1-based line number where the record starts. */
  line: number;
  /** Byte offset of the record's first byte. */
  start: number;
  /** Byte offset just after the record's line break: where the next record starts. */
  end: number;
  /** Line number where the next record starts (with `end`, what a reader resumes from). */
  nextLine?: number;
  /** The lanes of the record's fingerprint, with `fingerprintSeed` (`fingerprintText(h1, h2, end - start)`). */
  h1?: number;
  h2?: number;
  /** Set on a malformed record; `fields` then holds what could be read. */
  error?: string;
  /**
   * The record's bytes, line break included, when `keepRaw` was asked for (to copy a row verbatim, to
   * fingerprint it). A view into the chunk, not a copy: do not keep it beyond the record's processing.
   */
  raw?: Buffer;
}

export interface CsvReadOptions {
  /** A single ASCII character. Default `,`. */
  delimiter?: string;
  encoding?: FileEncoding;
  /** Byte offset the chunks start at (resuming); a BOM is only looked for at offset 0. */
  startOffset?: number;
  /** Line number of the first record (resuming). Default 1. */
  startLine?: number;
  /** A record longer than this is reported as malformed (almost always an unterminated quote). Default 1 MiB. */
  maxRecordBytes?: number;
  /** Attach each record's raw bytes as `raw`. */
  keepRaw?: boolean;
  /** Fingerprint each record's bytes (`h1`, `h2`) with this seed. Done here, on the chunk: no per-row view object. */
  fingerprintSeed?: number;
  /**
   * Key mode (`pushRows`/`finishRows`): find the field at this index and leave the record as bytes (a delta
   * compares fingerprints and anchors first, and builds few rows).
   */
  keyField?: number;
}

/**
 * A record read in key mode: where it is, its fingerprint lanes and its key field. A well-formed record keeps its
 * fields as bytes until `rowFields` decodes them; a malformed one has `fields` at once. The key field of a
 * record without quotes is not even decoded: `keyFrom`/`keyTo` say where its bytes are.
 */
export interface CsvRow {
  line: number;
  nextLine: number;
  start: number;
  end: number;
  /** Fingerprint lanes (0 without `fingerprintSeed`). */
  h1: number;
  h2: number;
  /** The field at `keyField`, decoded when the record has quotes or is malformed; undefined when it is missing. */
  key: string | undefined;
  /** In a record without quotes: the key field's bytes in `bytes` (-1 when the record has fewer fields). */
  keyFrom: number;
  keyTo: number;
  /** The fields when already decoded (records with quotes, malformed records). */
  fields: string[] | undefined;
  error?: string;
  /** With `fields` undefined: the record is bytes [from, to) of `bytes`, line break included. */
  bytes: Buffer;
  from: number;
  to: number;
}

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

export type Decoder = (buf: Buffer, start: number, end: number) => string;

export function decoderFor(encoding: FileEncoding): Decoder {
  if (encoding === 'utf8') return (b, s, e) => b.toString('utf8', s, e);
  if (encoding === 'latin1') return (b, s, e) => b.toString('latin1', s, e);
  return (b, s, e) => decodeCp1252(b, s, e);
}

/**
 * Windows-1252 is Latin-1 except 0x80-0x9F. Node 20's TextDecoder decodes those as C1 controls (fixed only in
 * later Node versions), so the table is ours.
 */
const CP1252_HIGH =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

function decodeCp1252(b: Buffer, s: number, e: number): string {
  const text = b.toString('latin1', s, e);
  return /[\u0080-\u009f]/.test(text) ? text.replace(/[\u0080-\u009f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]) : text;
}

export function encodeText(text: string, encoding: FileEncoding): Buffer {
  if (encoding === 'utf8') return Buffer.from(text, 'utf8');
  if (encoding === 'latin1') return Buffer.from(text, 'latin1');
  // TextEncoder cannot write Windows-1252: map the 0x80-0x9F characters back by hand, '?' for the rest.
  const out = Buffer.alloc(text.length);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    out[i] = CP1252_REVERSE.get(c) ?? (c < 0x100 && (c < 0x80 || c > 0x9f) ? c : 0x3f);
  }
  return out;
}

const CP1252_REVERSE = new Map<number, number>([...CP1252_HIGH].map((c, i) => [c.charCodeAt(0), 0x80 + i]));

/** The parser's own record: a CsvRecord, or in key mode the makings of a CsvRow. */
type ParsedRecord = Omit<CsvRecord, 'fields'> & { fields: string[] | undefined } & Partial<Pick<CsvRow, 'key' | 'keyFrom' | 'keyTo' | 'bytes' | 'from' | 'to'>>;
/** A record, or undefined when the bytes so far end inside it; `next` and `lines` of the parser say where it ends. */
type ParseOutcome = ParsedRecord | undefined;

/** The fields of a key-mode row (read now from its bytes when the reader left them there). */
export function rowFields(row: CsvRow, options: Pick<CsvReadOptions, 'delimiter' | 'encoding'>): string[] {
  if (row.fields) return row.fields;
  // A well-formed record read again on its own gives the same fields (see the byte offsets test).
  const [rec] = parseCsv(row.bytes.subarray(row.from, row.to), { ...options, startOffset: row.start, startLine: row.line });
  return rec.fields;
}

/** Parses records from chunks of bytes. Feed chunks with `push`, then call `finish`. */
export class CsvParser {
  private buf: Buffer = Buffer.alloc(0);
  /** File offset of buf[0]. */
  private base: number;
  private line: number;
  private readonly delim: number;
  private readonly delimChar: string;
  private readonly decode: Decoder;
  private readonly maxRecordBytes: number;
  private readonly keepRaw: boolean;
  private readonly seed?: number;
  private readonly keyField: number;
  private bomChecked: boolean;
  /** Cached position of the next quote byte in buf at or after some point, or -1 when none is left. */
  private nextQuote = -2;
  /** Of the record parsed last: where the next one starts in buf, and how many lines it spans. */
  private next = 0;
  private lines = 0;

  constructor(options: CsvReadOptions = {}) {
    const d = options.delimiter ?? ',';
    if (d.length !== 1 || d.charCodeAt(0) > 0x7f || d === '"' || d === '\n' || d === '\r') {
      throw new Error(`The delimiter must be one ASCII character other than a quote or a line break.`);
    }
    this.delim = d.charCodeAt(0);
    this.delimChar = d;
    this.decode = decoderFor(options.encoding ?? 'utf8');
    this.base = options.startOffset ?? 0;
    this.line = options.startLine ?? 1;
    this.maxRecordBytes = options.maxRecordBytes ?? 1024 * 1024;
    this.keepRaw = options.keepRaw ?? false;
    this.seed = options.fingerprintSeed;
    this.keyField = options.keyField ?? -1;
    this.bomChecked = this.base !== 0 || (options.encoding ?? 'utf8') !== 'utf8';
  }

  /** Add bytes; returns the records now complete. */
  push(chunk: Buffer): CsvRecord[] {
    if (this.keyField >= 0) throw new Error('A parser in key mode reads with pushRows.');
    this.add(chunk);
    return this.drain(false) as CsvRecord[];
  }

  /** End of input: returns the remaining records. */
  finish(): CsvRecord[] {
    if (this.keyField >= 0) throw new Error('A parser in key mode reads with finishRows.');
    return this.drain(true) as CsvRecord[];
  }

  /** Key mode (`keyField`): add bytes; returns the rows now complete. */
  pushRows(chunk: Buffer): CsvRow[] {
    if (this.keyField < 0) throw new Error('pushRows needs keyField.');
    this.add(chunk);
    return this.drain(false) as CsvRow[];
  }

  /** Key mode: end of input, the remaining rows. */
  finishRows(): CsvRow[] {
    if (this.keyField < 0) throw new Error('finishRows needs keyField.');
    return this.drain(true) as CsvRow[];
  }

  private add(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    this.nextQuote = -2;
  }

  private drain(eof: boolean): ParsedRecord[] {
    const out: ParsedRecord[] = [];
    let p = 0;
    if (!this.bomChecked) {
      if (this.buf.length < 3 && !eof) return out;
      if (this.buf[0] === 0xef && this.buf[1] === 0xbb && this.buf[2] === 0xbf) p = 3;
      this.bomChecked = true;
    }
    const buf = this.buf;
    while (p < buf.length) {
      let rec = this.parseRecord(buf, p, eof);
      if (rec === undefined) {
        if (buf.length - p <= this.maxRecordBytes) break;
        rec = this.skipBadRecord(buf, p, eof, `The record is longer than ${this.maxRecordBytes} bytes (an unterminated quote?).`);
        if (rec === undefined) break;
      }
      const next = this.next;
      this.line += this.lines;
      rec.nextLine = this.line;
      if (this.keepRaw) rec.raw = buf.subarray(p, next);
      this.finishRecord(rec, buf, p, next);
      // A blank line is no record.
      const blank = rec.fields !== undefined && rec.fields.length === 1 && rec.fields[0] === '' && !rec.error;
      if (!blank) out.push(rec);
      p = next;
    }
    this.base += p;
    this.buf = p === buf.length ? Buffer.alloc(0) : buf.subarray(p);
    this.nextQuote = -2;
    return out;
  }

  /** Fingerprint lanes and, in key mode, the key of a decoded record (fields undecoded ones got it already). */
  private finishRecord(rec: ParsedRecord, buf: Buffer, p: number, next: number): void {
    if (this.seed !== undefined) {
      fingerprintLanes(this.seed, buf, p, next);
      rec.h1 = LANES[0];
      rec.h2 = LANES[1];
    }
    if (this.keyField >= 0 && rec.fields !== undefined) rec.key = this.keyField < rec.fields.length ? rec.fields[this.keyField] : undefined;
  }

  /**
   * A record, every property set at once (one object shape, nothing added later); also notes where it ends.
   * In key mode a record whose `fields` are undefined is kept as bytes [p, next) of `buf`.
   */
  private record(
    buf: Buffer,
    p: number,
    next: number,
    lines: number,
    fields: string[] | undefined,
    key?: string,
    keyFrom = -1,
    keyTo = -1,
    error?: string,
  ): ParsedRecord {
    this.next = next;
    this.lines = lines;
    const keyed = this.keyField >= 0;
    return {
      fields,
      line: this.line,
      start: this.base + p,
      end: this.base + next,
      nextLine: 0,
      h1: 0,
      h2: 0,
      error,
      raw: undefined,
      key,
      keyFrom,
      keyTo,
      bytes: keyed ? buf : undefined,
      from: keyed ? p : 0,
      to: keyed ? next : 0,
    };
  }

  /** Key mode, a line without quotes: find its key field, keep the record as bytes. */
  private keyedRecord(buf: Buffer, p: number, contentEnd: number, next: number): ParsedRecord {
    const d = this.delim;
    let s = p;
    let k = this.keyField;
    while (k > 0 && s < contentEnd) if (buf[s++] === d) k--;
    let e = -1;
    if (k === 0) {
      e = s;
      while (e < contentEnd && buf[e] !== d) e++;
    } else s = -1;
    return this.record(buf, p, next, 1, undefined, undefined, s, e);
  }

  private quoteFrom(buf: Buffer, p: number): number {
    if (this.nextQuote === -1) return -1;
    if (this.nextQuote < p) this.nextQuote = buf.indexOf(QUOTE, p);
    return this.nextQuote;
  }

  private parseRecord(buf: Buffer, p: number, eof: boolean): ParseOutcome {
    const nl = buf.indexOf(LF, p);
    if (nl < 0 && !eof) return undefined;
    const lineEnd = nl < 0 ? buf.length : nl;
    const q = this.quoteFrom(buf, p);
    if (q < 0 || q >= lineEnd) {
      // Fast path: no quote on this line, so split the decoded line on the delimiter.
      const contentEnd = lineEnd > p && buf[lineEnd - 1] === CR ? lineEnd - 1 : lineEnd;
      const next = nl < 0 ? buf.length : nl + 1;
      // A blank line goes the plain way: it is no record.
      if (this.keyField >= 0 && contentEnd > p) return this.keyedRecord(buf, p, contentEnd, next);
      return this.record(buf, p, next, 1, this.decode(buf, p, contentEnd).split(this.delimChar));
    }
    return this.parseQuoted(buf, p, eof);
  }

  /**
   * The general state machine, for records with quotes. In key mode only the key field is decoded (`fields`
   * stays empty and `n` counts the fields).
   */
  private parseQuoted(buf: Buffer, p: number, eof: boolean): ParseOutcome {
    const fields: string[] = [];
    const keyField = this.keyField;
    let key: string | undefined;
    let n = 0;
    let i = p;
    let lines = 0;
    for (;;) {
      if (i >= buf.length) {
        if (!eof) return undefined;
        if (keyField < 0) fields.push('');
        else if (n === keyField) key = '';
        return this.done(buf, fields, p, buf.length, lines + 1, key);
      }
      if (buf[i] === QUOTE) {
        let j = i + 1;
        let escaped = false;
        let k: number;
        for (;;) {
          k = buf.indexOf(QUOTE, j);
          if (k < 0) {
            if (!eof) return undefined;
            return this.skipBadRecord(buf, p, eof, 'A quoted field is not closed.');
          }
          if (k + 1 >= buf.length && !eof) return undefined;
          if (buf[k + 1] === QUOTE) {
            escaped = true;
            j = k + 2;
            continue;
          }
          break;
        }
        if (keyField < 0 || n === keyField) {
          let value = this.decode(buf, i + 1, k);
          if (escaped) value = value.replace(/""/g, '"');
          if (keyField < 0) fields.push(value);
          else key = value;
        }
        n++;
        for (let x = i + 1; x < k; x++) if (buf[x] === LF) lines++;
        i = k + 1;
        if (i >= buf.length) return this.done(buf, fields, p, buf.length, lines + 1, key);
        const c = buf[i];
        if (c === this.delim) {
          i++;
          continue;
        }
        if (c === LF) return this.done(buf, fields, p, i + 1, lines + 1, key);
        if (c === CR) {
          if (i + 1 >= buf.length && !eof) return undefined;
          if (i + 1 >= buf.length) return this.done(buf, fields, p, buf.length, lines + 1, key);
          if (buf[i + 1] === LF) return this.done(buf, fields, p, i + 2, lines + 1, key);
        }
        return this.skipBadRecord(buf, p, eof, afterClosingQuote(this.line, this.line + lines), lines);
      }
      let k = i;
      while (k < buf.length) {
        const b = buf[k];
        if (b === this.delim || b === LF) break;
        k++;
      }
      if (k >= buf.length && !eof) return undefined;
      if (keyField < 0 || n === keyField) {
        const contentEnd = k > i && (k >= buf.length || buf[k] === LF) && buf[k - 1] === CR ? k - 1 : k;
        const value = this.decode(buf, i, contentEnd);
        if (keyField < 0) fields.push(value);
        else key = value;
      }
      n++;
      if (k >= buf.length) return this.done(buf, fields, p, buf.length, lines + 1, key);
      if (buf[k] === LF) return this.done(buf, fields, p, k + 1, lines + 1, key);
      i = k + 1;
    }
  }

  private done(buf: Buffer, fields: string[], p: number, next: number, lines: number, key: string | undefined): ParseOutcome {
    return this.record(buf, p, next, lines, this.keyField < 0 ? fields : undefined, key);
  }

  /**
   * Report the record at `p` as malformed and go on after the line break that ends the line it started on (or,
   * for text after a closing quote, after the line where the damage is), so the rows after it are still read.
   */
  private skipBadRecord(buf: Buffer, p: number, eof: boolean, error: string, linesBefore = 0): ParseOutcome {
    let from = p;
    for (let n = 0; n < linesBefore; n++) from = buf.indexOf(LF, from) + 1;
    const nl = buf.indexOf(LF, from);
    if (nl < 0 && !eof) return undefined;
    const next = nl < 0 ? buf.length : nl + 1;
    const contentEnd = nl < 0 ? buf.length : nl;
    const fields = this.decode(buf, p, contentEnd).split(this.delimChar);
    return this.record(buf, p, next, linesBefore + 1, fields, undefined, -1, -1, error);
  }
}

/**
 * The error of a record whose closing quote is followed by text. When the quoted field ran over several lines,
 * those lines were taken as one field (usually a quote never closed on the first of them, closed by a stray
 * quote far below): the message says which lines were not read as rows.
 */
function afterClosingQuote(start: number, end: number): string {
  if (end === start) return `Unexpected text after a closing quote (line ${end}).`;
  return (
    `Unexpected text after a closing quote (line ${end}): the quoted field opened on line ${start} runs over ${end - start + 1} lines, ` +
    `so lines ${start}-${end} were not read as rows (a quote not closed on line ${start}?).`
  );
}

/** Stream records from chunks of bytes, one array per chunk (a promise per chunk, not per row). */
export async function* readCsvBatches(chunks: AsyncIterable<Buffer>, options: CsvReadOptions = {}): AsyncGenerator<CsvRecord[]> {
  const parser = new CsvParser(options);
  for await (const chunk of chunks) {
    const batch = parser.push(chunk);
    if (batch.length) yield batch;
  }
  const rest = parser.finish();
  if (rest.length) yield rest;
}

/** Stream records from chunks of bytes. */
export async function* readCsvRecords(chunks: AsyncIterable<Buffer>, options: CsvReadOptions = {}): AsyncGenerator<CsvRecord> {
  for await (const batch of readCsvBatches(chunks, options)) yield* batch;
}

/** Parse a whole text or buffer at once (small files, tests). */
export function parseCsv(input: string | Buffer, options: CsvReadOptions = {}): CsvRecord[] {
  const parser = new CsvParser(options);
  const buf = typeof input === 'string' ? encodeText(input, options.encoding ?? 'utf8') : input;
  return [...parser.push(buf), ...parser.finish()];
}

/** One field as CSV text: quoted when it holds the delimiter, a quote, a line break or edge spaces. */
export function formatCsvField(value: string, delimiter = ','): string {
  if (value === '') return '';
  const needsQuotes = value.includes(delimiter) || value.includes('"') || value.includes('\n') || value.includes('\r') || value.trim() !== value;
  return needsQuotes ? '"' + value.replace(/"/g, '""') + '"' : value;
}

export function formatCsvRow(fields: string[], delimiter = ','): string {
  return fields.map((f) => formatCsvField(f, delimiter)).join(delimiter) + '\n';
}

/**
 * A 64-bit fingerprint of a row's bytes (two 32-bit multiplicative lanes, in the manner of cyrb53). Not a
 * cryptographic hash: it only tells a row from its own previous version, where a chance collision is 2^-64,
 * and it allocates nothing per byte, which matters at 100,000 rows per delta.
 */
export function fingerprint(seed: number, bytes: Uint8Array, start = 0, end = bytes.length): string {
  fingerprintLanes(seed, bytes, start, end);
  return fingerprintText(LANES[0], LANES[1], end - start);
}

/** `fingerprint` as text from its lanes and the length of the bytes. */
export function fingerprintText(h1: number, h2: number, length: number): string {
  return (h1 >>> 0).toString(36) + '.' + (h2 >>> 0).toString(36) + '.' + length.toString(36);
}

/**
 * Where `fingerprintLanes` leaves its result (read it right after the call): returning two numbers without
 * allocating an array per row.
 */
export const LANES = new Int32Array(2);

/** The two lanes of `fingerprint`, into `LANES`. */
export function fingerprintLanes(seed: number, bytes: Uint8Array, start = 0, end = bytes.length): void {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = start; i < end; i++) {
    const b = bytes[i];
    h1 = Math.imul(h1 ^ b, 2654435761);
    h2 = Math.imul(h2 ^ b, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  LANES[0] = h1;
  LANES[1] = h2;
}
