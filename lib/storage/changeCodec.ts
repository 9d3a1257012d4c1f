import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants, inflateRaw } from 'node:zlib';
import type { RunChange, StoredChange } from './runChangeTypes';

/**
 * The bytes of one page of a run's changes (lib/storage/runChanges.ts), and back: pure but for the thread pool.
 *
 * Two formats, told apart by the row's `f` column:
 * - format 1 (rows without `f`, written before format 2 existed): the items as a JSON array of objects,
 *   raw-deflated. Still read: a plan can be applied for up to `Plans:ExpireHours` (up to a year) and a run's
 *   changes are kept as long as its record.
 * - format 2 (`f` = 2): brotli at quality 1 (about 2.5 times faster than deflate at its fastest and a little
 *   smaller on these pages) of `{"v":2,"c":[...]}`, one array an item:
 *   `[target, operation, outcome, csObjectId, meshObjectId, anchor, dn, attributes, error, key, fp]` with
 *   target 0 mesh / 1 connector, operation and outcome as their index in {@link OPERATIONS} / {@link OUTCOMES},
 *   attributes flat as `name, old, new, name, old, new, ...`, key 0 (absent), 1 (the anchor) or the key, fp 0
 *   (absent) or the fingerprint. Half the JSON of format 1: cheaper to write, compress, send and parse.
 *   A page holding an item this layout cannot carry exactly (a property it does not know, an `undefined`) is
 *   written as `{"v":2,"o":[...items as objects]}` instead, so what is read back is always what was written.
 */

export const FORMAT = 2;

const OPERATIONS = ['Add', 'Update', 'Delete', 'Rename'] as const;
const OUTCOMES = ['applied', 'planned', 'failed', 'drifted'] as const;
const KNOWN = new Set(['target', 'operation', 'csObjectId', 'meshObjectId', 'anchor', 'dn', 'attributes', 'outcome', 'error', 'key', 'fp']);
const REQUIRED = ['csObjectId', 'meshObjectId', 'anchor', 'dn', 'attributes', 'error'] as const;

type Value = RunChange['attributes'][string]['old'];
type Compact = [
  number,
  number,
  number,
  string | null,
  string | null,
  string | null,
  string | null,
  (string | Value)[],
  string | null,
  0 | 1 | string,
  0 | string,
];

const compress = promisify(brotliCompress);
const decompress = promisify(brotliDecompress);
const inflate = promisify(inflateRaw);

/** True when the compact layout carries the item exactly. */
function compactable(c: StoredChange): boolean {
  if (c.target !== 'mesh' && c.target !== 'connector') return false;
  if (!OPERATIONS.includes(c.operation) || !OUTCOMES.includes(c.outcome)) return false;
  for (const k in c) if (!KNOWN.has(k) || (c as unknown as Record<string, unknown>)[k] === undefined) return false;
  for (const k of REQUIRED) if (!(k in c)) return false;
  if (c.attributes === null || typeof c.attributes !== 'object') return false;
  for (const name in c.attributes) {
    const a = c.attributes[name];
    if (a === null || typeof a !== 'object' || a.old === undefined || a.new === undefined || Object.keys(a).length !== 2) return false;
  }
  return true;
}

function toCompact(c: StoredChange): Compact {
  const attributes: (string | Value)[] = [];
  for (const name in c.attributes) {
    const a = c.attributes[name];
    attributes.push(name, a.old, a.new);
  }
  const key = c.key === undefined ? 0 : c.anchor !== null && c.key === c.anchor ? 1 : c.key;
  return [
    c.target === 'mesh' ? 0 : 1,
    OPERATIONS.indexOf(c.operation),
    OUTCOMES.indexOf(c.outcome),
    c.csObjectId,
    c.meshObjectId,
    c.anchor,
    c.dn,
    attributes,
    c.error,
    key,
    c.fp === undefined ? 0 : c.fp,
  ];
}

function fromCompact(r: Compact): StoredChange {
  const attributes: StoredChange['attributes'] = {};
  const a = r[7];
  for (let i = 0; i < a.length; i += 3) attributes[a[i] as string] = { old: a[i + 1], new: a[i + 2] };
  const c: StoredChange = {
    target: r[0] === 0 ? 'mesh' : 'connector',
    operation: OPERATIONS[r[1]],
    csObjectId: r[3],
    meshObjectId: r[4],
    anchor: r[5],
    dn: r[6],
    attributes,
    outcome: OUTCOMES[r[2]],
    error: r[8],
  };
  if (r[9] !== 0) c.key = r[9] === 1 ? (r[5] as string) : r[9];
  if (r[10] !== 0) c.fp = r[10];
  return c;
}

/** The text of a page's items in format 2 (before compression). */
export function encodeItems(items: readonly StoredChange[]): string {
  if (!items.every(compactable)) return JSON.stringify({ v: FORMAT, o: items });
  const rows = new Array<Compact>(items.length);
  for (let i = 0; i < items.length; i++) rows[i] = toCompact(items[i]);
  return JSON.stringify({ v: FORMAT, c: rows });
}

/** The items of a page's text in format 2. */
export function decodeItems(text: string): StoredChange[] {
  const page = JSON.parse(text) as { v: number; c?: Compact[]; o?: StoredChange[] };
  if (page.o) return page.o;
  return (page.c ?? []).map(fromCompact);
}

/** A page's items as the bytes of a row (format {@link FORMAT}). */
export async function packItems(items: readonly StoredChange[]): Promise<Buffer> {
  const text = Buffer.from(encodeItems(items), 'utf8');
  return compress(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 1,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    },
  });
}

/** The items of a row's bytes: `format` is the row's `f` (absent: format 1). */
export async function unpackItems(data: Buffer, format: number | undefined): Promise<StoredChange[]> {
  if (format === FORMAT) return decodeItems((await decompress(data)).toString('utf8'));
  if (format === undefined || format === 1) return JSON.parse((await inflate(data)).toString('utf8')) as StoredChange[];
  throw new Error(`Run changes stored in format ${format}, which this version cannot read.`);
}
