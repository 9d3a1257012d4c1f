import { stringify as toYaml } from 'yaml';

export type OutputFormat = 'table' | 'json' | 'yaml';

/** A column of a table: the header and how to get the cell from an item (a dotted path or a function). */
export interface Column {
  header: string;
  get: string | ((item: Record<string, unknown>) => unknown);
  /** Never narrowed: ids are for pasting into the next command. Default: a header `ID` or ending in ` ID`. */
  whole?: boolean;
  /** Shown with `-o wide` only: the id beside a column that shows another resource's name. */
  wide?: boolean;
}

const isWhole = (c: Column) => c.whole ?? /(^| )ID$/.test(c.header);

/** `name:path` shorthand for a column list: `col('ID', 'id')`. */
export const col = (header: string, get: Column['get']): Column => ({ header, get });

/** A column shown with `-o wide` only (the id of another resource whose name a column shows). */
export const wideCol = (header: string, get: Column['get']): Column => ({ header, get, wide: true });

function pick(item: Record<string, unknown>, get: Column['get']): unknown {
  if (typeof get === 'function') return get(item);
  let v: unknown = item;
  for (const key of get.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
  return v;
}

/**
 * What a terminal would act on instead of showing: ESC sequences (CSI such as `\x1b[2J`, OSC such as a window
 * title or a hyperlink, up to BEL or ST, and two-character ones), the other C0 controls but tab and newline,
 * DEL, the C1 controls (U+0080-U+009F; `\x9b` is a CSI of its own and goes with its parameters) and the bidirectional overrides that make
 * text read other than it is stored. Each part of the pattern is bounded by the next character class, so
 * it runs in linear time.
 */
const TERMINAL_CONTROLS =
  /\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\s\S])?|\x9b[0-?]*[ -/]*[@-~]?|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text from the service (identity data, problem details) made safe to print on a terminal: every control
 * sequence and control character removed, tabs and newlines kept. JSON output does not go through it (JSON
 * escapes control characters itself).
 */
export function terminalSafe(text: string): string {
  return text.replace(TERMINAL_CONTROLS, '');
}

/** Write plain text to stdout without the control sequences it may carry. */
export function writeOut(text: string): void {
  process.stdout.write(terminalSafe(text));
}

/** Write plain text to stderr without the control sequences it may carry. */
export function writeErr(text: string): void {
  process.stderr.write(terminalSafe(text));
}

/** A cell's text: strings as they are, null/undefined empty, objects as compact JSON, one line, no control characters. */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return terminalSafe(v).replace(/\s+/g, ' ');
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return terminalSafe(JSON.stringify(v));
}

/** The terminal's width (stdout), or 120 when it is not a terminal, or COLUMNS when set. */
export function terminalWidth(): number {
  const env = Number(process.env.COLUMNS);
  if (Number.isInteger(env) && env > 20) return env;
  return process.stdout.isTTY && process.stdout.columns ? process.stdout.columns : 120;
}

/**
 * A table that fits `width`: columns as wide as their widest cell; when the sum is too wide, the widest
 * columns are narrowed (never below 8 characters) and their cells cut with "…". Id columns are never narrowed
 * (an id cut short cannot be pasted): a table of long ids may be wider than the terminal.
 */
export function renderTable(rows: Record<string, unknown>[], columns: Column[], width = terminalWidth()): string {
  const cells = rows.map((row) => columns.map((c) => cellText(pick(row, c.get))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i].length)));
  const gap = 2;
  const total = () => widths.reduce((a, b) => a + b, 0) + gap * (widths.length - 1);
  const narrowable = columns.map((c) => !isWhole(c));
  while (total() > width) {
    const widest = widths.reduce((best, w, i) => (narrowable[i] && (best < 0 || w > widths[best]) ? i : best), -1);
    if (widest < 0 || widths[widest] <= 8) break;
    widths[widest] = Math.max(8, widths[widest] - (total() - width));
  }
  const fit = (s: string, w: number) => (s.length > w ? `${s.slice(0, w - 1)}…` : s.padEnd(w));
  const line = (values: string[]) =>
    values
      .map((v, i) => fit(v, widths[i]))
      .join(' '.repeat(gap))
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}

/** One object as `key: value` lines (nested objects as compact JSON), for `show` commands in table mode. */
export function renderDetail(item: Record<string, unknown>, width = terminalWidth()): string {
  const keys = Object.keys(item);
  const pad = Math.min(28, Math.max(0, ...keys.map((k) => k.length)));
  return keys
    .map((k) => {
      const text = cellText(item[k]);
      const room = Math.max(20, width - pad - 2);
      return `${k.padEnd(pad)}  ${text.length > room ? `${text.slice(0, room - 1)}…` : text}`;
    })
    .join('\n');
}

/**
 * Print a command's result. json and yaml print the API's answer as it is (scripts get every field);
 * table prints the columns for lists (with "N of TOTAL" when paged) and key/value lines for one object;
 * wide is table with the id columns that stand beside names, no cell cut.
 */
export function print(data: unknown, format: OutputFormat | 'wide', columns?: Column[]): void {
  if (columns && format !== 'wide') columns = columns.filter((c) => !c.wide);
  // wide is never narrowed to the terminal: every cell whole, for copying.
  const width = format === 'wide' ? Number.POSITIVE_INFINITY : terminalWidth();
  if (format === 'json') return void process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
  if (format === 'yaml') return void process.stdout.write(terminalSafe(toYaml(data ?? null)));
  if (data === undefined || data === null) return;
  if (Array.isArray(data)) return void process.stdout.write(`${renderTable(data as Record<string, unknown>[], columns ?? autoColumns(data), width)}\n`);
  const obj = data as Record<string, unknown>;
  if (Array.isArray(obj.items) && columns) {
    const items = obj.items as Record<string, unknown>[];
    const table = items.length ? `${renderTable(items, columns, width)}\n` : '';
    const total = typeof obj.totalCount === 'number' ? obj.totalCount : items.length;
    // A computed listing (the next export's) that looked at only part of the objects says so.
    const partial = obj.partial === true ? ' (partial: the next export has more than 20,000 objects to look at; this list is incomplete)' : '';
    return void process.stdout.write(`${table}${items.length} of ${total}${partial}\n`);
  }
  process.stdout.write(`${renderDetail(obj, width)}\n`);
}

function autoColumns(rows: unknown[]): Column[] {
  const keys = [...new Set(rows.flatMap((r) => (r && typeof r === 'object' ? Object.keys(r) : [])))].slice(0, 8);
  return keys.map((k) => col(k, k));
}
