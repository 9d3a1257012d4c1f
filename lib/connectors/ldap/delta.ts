import { type ConnectorObject, type DeltaChange, type DeltaImportOptions, type DeltaPage, type ObjectError } from '../sdk';
import { isObjectError, type Scope } from './objects';
import { type DirectorySession, type LdapEntry } from './session';
import { isUnder, normalizeDn, parentDn } from './values';

/**
 * Delta import strategies of the directory connector, one per kind of change log:
 *
 * - `accesslog` (OpenLDAP cn=accesslog): log entries from a floor `reqStart` with an overlap window, de-duplicated
 *   by the reqStart values already seen; deletes by reqEntryUUID, renames by reqDN/reqNewDN; plus an entryCSN
 *   sweep of the data, because overlay side effects (refint removing a deleted user from groups, memberof) are
 *   not logged. Integrity: the newest log entry seen must still be there, and the naming context the same.
 * - `changelog` (cn=changelog with changeNumber: 389 DS, OpenDJ, Oracle): changes after the stored number; the
 *   log no longer reaching it (firstChangeNumber past it) or going backwards means a full import.
 * - `usn` (Active Directory): uSNChanged above the stored highestCommittedUSN; deletes from tombstones with the
 *   Show Deleted control (named by the DN they had); entries moved out of the containers are deletes; the
 *   entries naming a moved or renamed entry (AD rewrites member, manager... without moving their uSNChanged)
 *   are read again; another DC (dsServiceName) or a watermark older than the tombstone lifetime means a
 *   full import. Tested against a Samba AD DC (test/integration/ldap/adDelta.test.ts).
 * - `timestamp` (any directory): modifyTimestamp with a one-second overlap; it cannot see deletes, so every
 *   {@link ANCHOR_DIFF_EVERY}th delta compares the anchor set with the one stored in the watermark's state.
 *
 * A watermark is JSON text naming its strategy; a watermark of another strategy than the configured one asks
 * for a full import.
 */
export type StrategyName = 'accesslog' | 'changelog' | 'usn' | 'dirsync' | 'timestamp';

export interface DeltaContext {
  session: DirectorySession;
  scope: Scope;
  baseDN: string;
  configured: StrategyName | 'auto';
  readAttributes: string[];
  toObject(entry: LdapEntry): Promise<ConnectorObject | ObjectError | undefined>;
  lookup(anchors: string[]): Promise<Map<string, LdapEntry>>;
  /** The bind account (Active Directory: `auto` picks `dirsync` for an account that cannot list deleted objects but may use DirSync). */
  bindDN?: string;
  /** Overlap window for log and CSN floors, microseconds (default 10 s). */
  overlapMicros?: number;
}

export interface DeltaStrategy {
  name: StrategyName;
  /** The watermark for "now", taken before a full import reads its first page. */
  capture(): Promise<string>;
  delta(watermark: string, options: DeltaImportOptions): AsyncGenerator<DeltaPage>;
}

export const ANCHOR_DIFF_EVERY = 10;
export const SHOW_DELETED_OID = '1.2.840.113556.1.4.417';
export const AD_CAPABILITY_OID = '1.2.840.113556.1.4.800';
export const DEFAULT_OVERLAP = 10_000_000;

export const first = (e: LdapEntry | undefined, name: string): string | undefined => {
  if (!e) return undefined;
  const key = Object.keys(e).find((k) => k.toLowerCase() === name.toLowerCase());
  if (!key) return undefined;
  const v = e[key];
  const x = Array.isArray(v) ? v[0] : v;
  return x === undefined ? undefined : Buffer.isBuffer(x) ? x.toString('utf8') : String(x);
};
export const all = (e: LdapEntry, name: string): string[] => {
  const key = Object.keys(e).find((k) => k.toLowerCase() === name.toLowerCase());
  if (!key) return [];
  const v = e[key];
  return (Array.isArray(v) ? v : [v]).map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
};

export async function rootDse(s: DirectorySession, attributes: string[]): Promise<LdapEntry> {
  const [root] = await s.search({ base: '', scope: 'base', filter: '(objectClass=*)', attributes });
  return root ?? { dn: '' };
}

export function namingContextOf(baseDN: string, contexts: string[]): string | undefined {
  return contexts.filter((nc) => nc && isUnder(baseDN, nc)).sort((a, b) => b.length - a.length)[0];
}

export function parseWatermark<T extends { s: string }>(watermark: string, name: StrategyName): T | { reason: string } {
  let w: T;
  try {
    w = JSON.parse(watermark) as T;
  } catch {
    return { reason: 'The stored watermark is not one this connector wrote.' };
  }
  if (!w || w.s !== name) return { reason: `The stored watermark is for the '${w?.s ?? 'unknown'}' strategy; the directory is now read with '${name}'.` };
  return w;
}

/** One change per anchor, in the order first seen, with what the log says happened to it. */
export interface Pending {
  added: boolean;
  deleted: boolean;
  previousDn?: string;
  /** The current entry when a search already returned it. */
  entry?: LdapEntry;
  /** The DN a delete was logged for. */
  dn?: string;
  /** The mesh object type of a deleted entry, when the source says its class. */
  objectType?: string;
  /** A delete known by its DN only (`dn`, the DN at the watermark): the engine finds it in the connector space. */
  byDn?: boolean;
  /** A delete whose references the directory dropped without reporting the entries (see DeltaChange.referencesDropped). */
  referencesDropped?: boolean;
}

/** {@link Pending} for the strategies in other files (dirsync.ts). */
export type PendingChange = Pending;

/** Read the current state of every pending anchor and turn it into typed changes, `pageSize` per page. */
export async function* emit(
  ctx: DeltaContext,
  pending: Map<string, Pending>,
  options: DeltaImportOptions,
  nextWatermark: string,
  extraErrors: ObjectError[] = [],
  adjust: (e: LdapEntry) => LdapEntry = (e) => e,
): AsyncGenerator<DeltaPage> {
  const missing = [...pending.entries()].filter(([, p]) => !p.deleted && !p.entry).map(([a]) => a);
  const found = missing.length ? await ctx.lookup(missing) : new Map<string, LdapEntry>();
  for (const [a, e] of found) found.set(a, adjust(e));
  let changes: DeltaChange[] = [];
  let errors: ObjectError[] = [...extraErrors];
  const pageSize = Math.max(1, options.pageSize);
  const flush = function* (last: boolean): Generator<DeltaPage> {
    while (changes.length + errors.length >= pageSize || (last && (changes.length || errors.length))) {
      const c = changes.slice(0, pageSize);
      const e = errors.slice(0, Math.max(0, pageSize - c.length));
      changes = changes.slice(c.length);
      errors = errors.slice(e.length);
      const done = last && changes.length === 0 && errors.length === 0;
      yield done ? { changes: c, errors: e, nextWatermark } : { changes: c, errors: e };
      if (done) return;
    }
    if (last) yield { changes: [], errors: [], nextWatermark };
  };
  for (const [anchor, p] of pending) {
    const entry = p.deleted ? undefined : (p.entry ?? found.get(anchor));
    const o = entry ? await ctx.toObject(entry) : undefined;
    if (o && isObjectError(o)) {
      errors.push(o);
    } else if (!o) {
      // Gone, or moved out of scope: a delete (unless it came and went within this delta).
      if (p.byDn) changes.push({ kind: 'delete', anchor: '', dn: p.dn, objectType: typeOfDeleted(ctx, p) });
      else if (!p.added)
        changes.push({
          kind: 'delete',
          anchor,
          objectType: typeOfDeleted(ctx, p),
          ...(p.dn ? { previousDn: p.dn, previousContainer: parentDn(p.dn) } : {}),
          ...(p.referencesDropped ? { referencesDropped: true } : {}),
        });
    } else if (p.added) {
      changes.push({ kind: 'add', anchor, objectType: o.objectType, object: o });
    } else if (p.previousDn && normalizeDn(p.previousDn) !== normalizeDn(o.dn!)) {
      changes.push({ kind: 'rename', anchor, objectType: o.objectType, object: o, previousDn: p.previousDn, previousContainer: parentDn(p.previousDn) });
    } else {
      changes.push({ kind: 'update', anchor, objectType: o.objectType, object: o });
    }
    if (changes.length + errors.length >= pageSize) yield* flush(false);
  }
  yield* flush(true);
}

function typeOfDeleted(ctx: DeltaContext, p: Pending): string {
  // A log may not say the class of a deleted entry; the engine knows the anchor's type. Give the first
  // mapped type as a hint.
  return p.objectType ?? [...ctx.scope.classes.values()][0];
}

/** Values kept in a watermark's "already processed at or above the floor" lists. */
export const MAX_SEEN = 1000;

/**
 * A floor and the values at or above it already processed, bounded: a bulk load or a burst of more than
 * {@link MAX_SEEN} changes inside the overlap window would otherwise put every one of them in the watermark
 * (100,000 entries loaded in a few seconds made a 4 MB watermark, carried in every page's cursor). Past the
 * bound the floor moves up to the newest value and only the values equal to it stay listed. The cost: a change
 * that commits inside that window after the watermark was taken, with an older CSN or reqStart than the
 * newest, is missed until the next full import. Under the bound nothing changes.
 */
export function capSeen(floor: string, seen: string[]): { floor: string; seen: string[] } {
  if (seen.length <= MAX_SEEN) return { floor, seen };
  const newest = maxString(seen)!;
  return { floor: newest > floor ? newest : floor, seen: [...new Set(seen.filter((x) => x === newest))] };
}

/** DNs per reference search (each DN is one term per reference attribute). */
export const REFERENCE_BATCH = 50;

/**
 * An entry without the attributes a strategy read for its own bookkeeping (entryCSN, modifyTimestamp,
 * uSNCreated) unless the configured attributes ask for them (or, on Active Directory, `*` returns them too):
 * an object must look the same as in a full import, or its hash differs and every delta looks like an update.
 */
export function asRead(ctx: DeltaContext, e: LdapEntry, bookkeeping: string[]): LdapEntry {
  const asked = new Set(ctx.readAttributes.map((x) => x.toLowerCase()));
  const drop = new Set(bookkeeping.map((x) => x.toLowerCase()).filter((x) => !asked.has(x) && !(ctx.scope.isAd && asked.has('*') && x.startsWith('usn'))));
  if (!drop.size) return e;
  const out: LdapEntry = { dn: e.dn };
  for (const [k, v] of Object.entries(e)) if (!drop.has(k.toLowerCase())) out[k] = v;
  return out;
}

export function wrap(filter: string): string {
  return filter.startsWith('(') ? filter : `(${filter})`;
}

export function maxString(xs: string[]): string | null {
  let m: string | null = null;
  for (const x of xs) if (x && (m === null || x > m)) m = x;
  return m;
}

export function maxCsn(csns: string[]): string | null {
  return maxString(csns);
}
