import { ConnectorError, type ConnectorObject, type DeltaChange, type DeltaImportOptions, type DeltaPage, type ObjectError } from '../sdk';
import { anchorOf, classFilter, inScope, isObjectError, objectTypeOf, REFERENCE_ATTRIBUTES, type Scope } from './objects';
import { Control, type DirectorySession, type LdapEntry } from './session';
import { csnAt, csnMicros, escapeFilterValue, generalizedTimeToMicros, isUnder, microsToGeneralizedTime, normalizeDn, parentDn } from './values';

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
const SHOW_DELETED_OID = '1.2.840.113556.1.4.417';
export const AD_CAPABILITY_OID = '1.2.840.113556.1.4.800';
const DEFAULT_OVERLAP = 10_000_000;

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

function parseWatermark<T extends { s: string }>(watermark: string, name: StrategyName): T | { reason: string } {
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
interface Pending {
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
async function* emit(
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
      else if (!p.added) changes.push({ kind: 'delete', anchor, objectType: typeOfDeleted(ctx, p), ...(p.dn ? { previousDn: p.dn, previousContainer: parentDn(p.dn) } : {}), ...(p.referencesDropped ? { referencesDropped: true } : {}) });
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

/** {@link emit} for the strategies in other files (dirsync.ts). */
export const emitPending = emit;

function typeOfDeleted(ctx: DeltaContext, p: Pending): string {
  // A log may not say the class of a deleted entry; the engine knows the anchor's type. Give the first
  // mapped type as a hint.
  return p.objectType ?? [...ctx.scope.classes.values()][0];
}

// ---------------------------------------------------------------------------------------------------------
// accesslog

interface AccesslogWatermark {
  s: 'accesslog';
  /** entryUUID of the naming context entry: another server or a re-created tree gives another one. */
  u: string | null;
  /** The log base (cn=accesslog). */
  lb: string;
  /** Log floor (reqStart, generalized time) and the reqStart values at or above it already processed. */
  f: string;
  ls: string[];
  /** The newest log entry processed (its reqStart): it must still be in the log. */
  a: string | null;
  /** Data floor (entryCSN) and the entryCSN values at or above it already processed (overlay side effects). */
  c: string;
  cs: string[];
}

export class AccesslogStrategy implements DeltaStrategy {
  readonly name = 'accesslog' as const;
  constructor(private readonly ctx: DeltaContext) {}

  private get overlap(): number {
    return this.ctx.overlapMicros ?? DEFAULT_OVERLAP;
  }

  private async bases(): Promise<{ nc: string; uuid: string | null; logBase: string; logCsn: string | null; dataCsn: string | null }> {
    const s = this.ctx.session;
    const root = await rootDse(s, ['namingContexts']);
    const nc = namingContextOf(this.ctx.baseDN, all(root, 'namingContexts')) ?? this.ctx.baseDN;
    const [ncEntry] = await s.search({ base: nc, scope: 'base', filter: '(objectClass=*)', attributes: ['entryUUID', 'contextCSN', 'auditContext'] });
    const logBase = first(ncEntry, 'auditContext') ?? 'cn=accesslog';
    const [logEntry] = await s.search({ base: logBase, scope: 'base', filter: '(objectClass=*)', attributes: ['contextCSN'] }).catch((err: unknown) => {
      throw new ConnectorError('configuration_invalid', `deltaStrategy accesslog: the access log ${logBase} cannot be read (${(err as Error).message}); grant the bind DN read access to it.`);
    });
    if (!logEntry) throw new ConnectorError('configuration_invalid', `deltaStrategy accesslog: the access log ${logBase} was not found.`);
    return { nc, uuid: first(ncEntry, 'entryUUID') ?? null, logBase, logCsn: maxCsn(all(logEntry, 'contextCSN')), dataCsn: maxCsn(all(ncEntry ?? { dn: '' }, 'contextCSN')) };
  }

  async capture(): Promise<string> {
    const b = await this.bases();
    const nowUs = b.logCsn ? csnMicros(b.logCsn) : Date.now() * 1000;
    const f = microsToGeneralizedTime(nowUs - this.overlap);
    const log = await this.readLog(b.logBase, f);
    const dataNow = b.dataCsn ? csnMicros(b.dataCsn) : Date.now() * 1000;
    const c = csnAt(dataNow - this.overlap);
    const swept = await this.sweep(c, ['entryCSN']);
    const logFloor = capSeen(f, log.map((e) => first(e, 'reqStart')!));
    const dataFloor = capSeen(c, swept.map((e) => first(e, 'entryCSN')!).filter(Boolean));
    const w: AccesslogWatermark = {
      s: 'accesslog',
      u: b.uuid,
      lb: b.logBase,
      f: logFloor.floor,
      ls: logFloor.seen,
      a: maxString(log.map((e) => first(e, 'reqStart')!)),
      c: dataFloor.floor,
      cs: dataFloor.seen,
    };
    return JSON.stringify(w);
  }

  private async readLog(logBase: string, floor: string): Promise<LdapEntry[]> {
    const out: LdapEntry[] = [];
    const req = {
      base: logBase,
      scope: 'one' as const,
      filter: `(&(reqStart>=${floor})(reqResult=0)(|(reqType=add)(reqType=modify)(reqType=delete)(reqType=modrdn)))`,
      attributes: ['reqStart', 'reqType', 'reqDN', 'reqNewRDN', 'reqNewSuperior', 'reqEntryUUID', 'reqOld', 'entryCSN'],
    };
    for await (const page of this.ctx.session.searchPages(req, 1000)) out.push(...page);
    return out.sort((x, y) => (first(x, 'reqStart')! < first(y, 'reqStart')! ? -1 : 1));
  }

  private async sweep(csnFloor: string, attributes: string[]): Promise<LdapEntry[]> {
    const out: LdapEntry[] = [];
    for (const base of this.ctx.scope.include) {
      const req = { base, scope: 'sub' as const, filter: `(&${wrap(classFilter(this.ctx.scope))}(entryCSN>=${csnFloor}))`, attributes };
      for await (const page of this.ctx.session.searchPages(req, 1000)) out.push(...page);
    }
    return out;
  }

  /**
   * The entries whose references changed as a side effect of the logged renames, moves and deletes. Overlays
   * (refint rewriting member/manager values on a rename, dropping them on a delete; memberof) write without
   * a log entry and without a new entryCSN, so neither the log nor the CSN sweep shows them. They are found
   * instead: the entries that reference a deleted or renamed entry's old DN (refint has not reached them yet)
   * or a renamed entry's new DN (it has), and the groups a deleted entry was a member of (its memberOf, which
   * the log's copy of the deleted entry carries). refint works in the background after the operation, one
   * deleted or renamed entry after another (a third of a second each at 100,000 entries), so the delta does
   * not wait for it: {@link DnFates} applies the same rewrite to what was read.
   */
  private async referrers(log: LdapEntry[]): Promise<LdapEntry[]> {
    const oldDns: string[] = [];
    const newDns: string[] = [];
    const groups: string[] = [];
    for (const e of log) {
      const type = first(e, 'reqType');
      const dn = first(e, 'reqDN') ?? '';
      if (type === 'modrdn') {
        oldDns.push(dn);
        newDns.push(`${first(e, 'reqNewRDN')},${first(e, 'reqNewSuperior') ?? parentDn(dn)}`);
      } else if (type === 'delete') {
        oldDns.push(dn);
        for (const line of all(e, 'reqOld')) {
          const m = /^memberOf:\s*(.+)$/i.exec(line);
          if (m) groups.push(m[1]);
        }
      }
    }
    if (!oldDns.length) return [];
    const attrs = this.ctx.readAttributes;
    const out = [...(await this.referencing(oldDns, attrs)), ...(await this.referencing(newDns, attrs))];
    for (const dn of new Set(groups.filter((g) => inScope(g, this.ctx.scope)))) {
      const [g] = await this.ctx.session.search({ base: dn, scope: 'base', filter: '(objectClass=*)', attributes: attrs }).catch((err: unknown) => {
        if (err instanceof ConnectorError && err.code === 'configuration_invalid') return []; // gone since
        throw err;
      });
      if (g) out.push(g);
    }
    return out.filter((e) => objectTypeOf(e, this.ctx.scope) !== undefined && inScope(e.dn, this.ctx.scope));
  }

  /** The in-scope entries of mapped classes whose reference attributes (member, manager, ...) name one of `dns`. */
  private async referencing(dns: string[], attributes: string[]): Promise<LdapEntry[]> {
    const out: LdapEntry[] = [];
    const names = Object.keys(REFERENCE_ATTRIBUTES);
    for (let i = 0; i < dns.length; i += REFERENCE_BATCH) {
      const terms = dns.slice(i, i + REFERENCE_BATCH).flatMap((dn) => names.map((n) => `(${n}=${escapeFilterValue(dn)})`));
      for (const base of this.ctx.scope.include) {
        const req = { base, scope: 'sub' as const, filter: `(&${wrap(classFilter(this.ctx.scope))}(|${terms.join('')}))`, attributes };
        for await (const page of this.ctx.session.searchPages(req, 1000)) out.push(...page);
      }
    }
    return out;
  }

  async *delta(watermark: string, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    const w = parseWatermark<AccesslogWatermark>(watermark, 'accesslog');
    if ('reason' in w) {
      yield { changes: [], errors: [], fullImportRequired: w };
      return;
    }
    const b = await this.bases();
    if (w.u && b.uuid && w.u !== b.uuid) {
      yield { changes: [], errors: [], fullImportRequired: { reason: 'The directory is not the one the watermark was taken on (its naming context has another entryUUID).' } };
      return;
    }
    if (w.a) {
      const [still] = await this.ctx.session.search({ base: `reqStart=${w.a},${w.lb}`, scope: 'base', filter: '(objectClass=*)', attributes: ['1.1'] }).catch((err: unknown) => {
        if (err instanceof ConnectorError && err.code === 'configuration_invalid') return [];
        throw err;
      });
      if (!still) {
        yield { changes: [], errors: [], fullImportRequired: { reason: `The access log no longer reaches back to the watermark (its entry ${w.a} was purged or this is another server); a full import re-reads everything.` } };
        return;
      }
    }
    const seenLog = new Set(w.ls);
    const log = (await this.readLog(w.lb, w.f)).filter((e) => !seenLog.has(first(e, 'reqStart')!));
    const seenCsn = new Set(w.cs);
    const swept = (await this.sweep(w.c, [...this.ctx.readAttributes, 'entryCSN'])).filter((e) => !seenCsn.has(first(e, 'entryCSN')!));

    const pending = new Map<string, Pending>();
    const get = (a: string) => {
      let p = pending.get(a);
      if (!p) pending.set(a, (p = { added: false, deleted: false }));
      return p;
    };
    const errors: ObjectError[] = [];
    for (const e of log) {
      const type = first(e, 'reqType');
      const dn = first(e, 'reqDN') ?? '';
      const uuid = first(e, 'reqEntryUUID') ?? all(e, 'reqOld').find((x) => /^entryUUID:/i.test(x))?.replace(/^entryUUID:\s*/i, '');
      if (!uuid) {
        if (isUnder(dn, this.ctx.baseDN)) errors.push({ code: 'object_error', location: dn, message: `The access log entry ${first(e, 'reqStart')} names no entryUUID; a full import will catch this change.` });
        continue;
      }
      if (this.ctx.scope.anchorAttribute.toLowerCase() !== 'entryuuid') {
        errors.push({ code: 'object_error', location: dn, message: 'deltaStrategy accesslog needs anchorAttribute entryUUID.' });
        continue;
      }
      const wasInBase = isUnder(dn, this.ctx.baseDN);
      const newDn = type === 'modrdn' ? `${first(e, 'reqNewRDN')},${first(e, 'reqNewSuperior') ?? parentDn(dn)}` : dn;
      if (!wasInBase && !isUnder(newDn, this.ctx.baseDN)) continue;
      const p = get(uuid);
      if (type === 'add') {
        p.added = true;
        p.deleted = false;
      } else if (type === 'delete') {
        p.deleted = true;
        p.dn = dn;
        p.entry = undefined;
      } else if (type === 'modrdn' && p.previousDn === undefined && !p.added) {
        p.previousDn = wasInBase && inScope(dn, this.ctx.scope) ? dn : undefined;
      }
    }
    const fates = DnFates.of(log);
    for (const e of swept) {
      const a = anchorOf(e, this.ctx.scope.anchorAttribute);
      if (!a) continue;
      const p = get(a);
      if (!p.deleted) p.entry = fates.apply(asRead(this.ctx, e, ['entryCSN']));
    }
    for (const e of await this.referrers(log)) {
      const a = anchorOf(e, this.ctx.scope.anchorAttribute);
      if (!a) continue;
      const p = get(a);
      if (!p.deleted) p.entry = fates.apply(e);
    }

    const lsAll = [...w.ls, ...log.map((e) => first(e, 'reqStart')!)];
    const newestLog = maxString(lsAll);
    const f = newestLog ? maxString([w.f, microsToGeneralizedTime(generalizedTimeToMicros(newestLog) - this.overlap)])! : w.f;
    const csAll = [...w.cs, ...swept.map((e) => first(e, 'entryCSN')!).filter(Boolean)];
    const newestCsn = maxString(csAll);
    const c = newestCsn ? maxString([w.c, csnAt(csnMicros(newestCsn) - this.overlap)])! : w.c;
    const logFloor = capSeen(f, [...new Set(lsAll.filter((x) => x >= f))]);
    const dataFloor = capSeen(c, [...new Set(csAll.filter((x) => x >= c))]);
    const next: AccesslogWatermark = {
      s: 'accesslog',
      u: b.uuid ?? w.u,
      lb: w.lb,
      f: logFloor.floor,
      ls: logFloor.seen,
      a: maxString([w.a ?? '', ...log.map((e) => first(e, 'reqStart')!)]) || null,
      c: dataFloor.floor,
      cs: dataFloor.seen,
    };
    yield* emit(this.ctx, pending, options, JSON.stringify(next), errors, (e) => fates.apply(e));
  }
}

/**
 * What the logged deletes and renames did to DNs, applied to the reference values (member, manager, ...) of
 * the entries a delta read, as the directory's referential integrity (refint, Active Directory's link
 * maintenance) does in the background: a deleted entry's DN is dropped, a renamed one's replaced by its new
 * DN. The log is taken in order: a DN deleted or renamed away and then added again (or renamed into) names an
 * entry again and is left alone. Only whole DNs are rewritten (not the DNs under a renamed container). A new
 * DN goes last among the values, where refint puts it (it deletes the old value and adds the new one).
 */
export class DnFates {
  /** By normalized DN: null when deleted, else the DN it was renamed to. */
  private readonly fate = new Map<string, string | null>();
  /** By normalized new DN: the normalized DNs renamed to it (so a chain is followed without a scan). */
  private readonly sources = new Map<string, Set<string>>();

  static of(log: LdapEntry[]): DnFates {
    const f = new DnFates();
    for (const e of log) {
      const type = first(e, 'reqType');
      const dn = first(e, 'reqDN') ?? '';
      if (type === 'delete') f.deleted(dn);
      else if (type === 'modrdn') f.renamed(dn, `${first(e, 'reqNewRDN')},${first(e, 'reqNewSuperior') ?? parentDn(dn)}`);
      else if (type === 'add') f.clear(normalizeDn(dn));
    }
    return f;
  }

  deleted(dn: string): void {
    const n = normalizeDn(dn);
    for (const k of this.takeSources(n)) this.set(k, null);
    this.set(n, null);
  }

  renamed(from: string, to: string): void {
    const n = normalizeDn(from);
    const t = normalizeDn(to);
    if (t === n) return;
    for (const k of this.takeSources(n)) this.set(k, to);
    // The new DN names an entry (again).
    this.clear(t);
    this.set(n, to);
  }

  /** `k` names an entry: no fate. */
  private clear(k: string): void {
    const before = this.fate.get(k);
    if (before) this.sources.get(normalizeDn(before))?.delete(k);
    this.fate.delete(k);
  }

  private set(k: string, to: string | null): void {
    this.clear(k);
    this.fate.set(k, to);
    if (to === null) return;
    const t = normalizeDn(to);
    let set = this.sources.get(t);
    if (!set) this.sources.set(t, (set = new Set()));
    set.add(k);
  }

  private takeSources(n: string): string[] {
    const set = this.sources.get(n);
    this.sources.delete(n);
    return set ? [...set] : [];
  }

  /** The entry with its reference values rewritten (the same object when nothing changes). */
  apply(e: LdapEntry): LdapEntry {
    if (!this.fate.size) return e;
    let out: LdapEntry | undefined;
    for (const key of Object.keys(e)) {
      if (!REFERENCE_ATTRIBUTES[key.toLowerCase()]) continue;
      const v = e[key];
      const values = Array.isArray(v) ? v : [v];
      let changed = false;
      const kept: string[] = [];
      const renamed: string[] = [];
      for (const x of values) {
        const text = Buffer.isBuffer(x) ? x.toString('utf8') : String(x);
        const fate = this.fate.get(normalizeDn(text));
        if (fate === undefined) kept.push(text);
        else {
          changed = true;
          if (fate !== null) renamed.push(fate);
        }
      }
      if (!changed) continue;
      out ??= { ...e };
      // As refint writes it (the old value deleted, the new one added): a new DN comes last.
      const seen = new Set(kept.map(normalizeDn));
      for (const dn of renamed) {
        if (seen.has(normalizeDn(dn))) continue;
        seen.add(normalizeDn(dn));
        kept.push(dn);
      }
      // The last value deleted removes the attribute, as in the directory.
      if (kept.length) out[key] = kept;
      else delete out[key];
    }
    return out ?? e;
  }
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
const REFERENCE_BATCH = 50;

/**
 * An entry without the attributes a strategy read for its own bookkeeping (entryCSN, modifyTimestamp,
 * uSNCreated) unless the configured attributes ask for them (or, on Active Directory, `*` returns them too):
 * an object must look the same as in a full import, or its hash differs and every delta looks like an update.
 */
function asRead(ctx: DeltaContext, e: LdapEntry, bookkeeping: string[]): LdapEntry {
  const asked = new Set(ctx.readAttributes.map((x) => x.toLowerCase()));
  const drop = new Set(bookkeeping.map((x) => x.toLowerCase()).filter((x) => !asked.has(x) && !(ctx.scope.isAd && asked.has('*') && x.startsWith('usn'))));
  if (!drop.size) return e;
  const out: LdapEntry = { dn: e.dn };
  for (const [k, v] of Object.entries(e)) if (!drop.has(k.toLowerCase())) out[k] = v;
  return out;
}

function wrap(filter: string): string {
  return filter.startsWith('(') ? filter : `(${filter})`;
}

function maxString(xs: string[]): string | null {
  let m: string | null = null;
  for (const x of xs) if (x && (m === null || x > m)) m = x;
  return m;
}

function maxCsn(csns: string[]): string | null {
  return maxString(csns);
}

// ---------------------------------------------------------------------------------------------------------
// changelog (cn=changelog, changeNumber)

interface ChangelogWatermark {
  s: 'changelog';
  n: number;
}

export class ChangelogStrategy implements DeltaStrategy {
  readonly name = 'changelog' as const;
  constructor(private readonly ctx: DeltaContext) {}

  private async numbers(): Promise<{ firstN: number; lastN: number; base: string }> {
    const root = await rootDse(this.ctx.session, ['firstChangeNumber', 'lastChangeNumber', 'changelog']);
    const lastN = Number(first(root, 'lastChangeNumber') ?? NaN);
    if (!Number.isFinite(lastN)) throw new ConnectorError('configuration_invalid', 'deltaStrategy changelog: the root DSE shows no lastChangeNumber (is the retro changelog enabled and readable?).');
    return { firstN: Number(first(root, 'firstChangeNumber') ?? 1), lastN, base: first(root, 'changelog') ?? 'cn=changelog' };
  }

  async capture(): Promise<string> {
    const { lastN } = await this.numbers();
    return JSON.stringify({ s: 'changelog', n: lastN } satisfies ChangelogWatermark);
  }

  async *delta(watermark: string, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    const w = parseWatermark<ChangelogWatermark>(watermark, 'changelog');
    if ('reason' in w) {
      yield { changes: [], errors: [], fullImportRequired: w };
      return;
    }
    const { firstN, lastN, base } = await this.numbers();
    if (lastN < w.n) {
      yield { changes: [], errors: [], fullImportRequired: { reason: `The change log ends at ${lastN}, before the watermark ${w.n} (a restored or another server).` } };
      return;
    }
    if (firstN > w.n + 1 && lastN > w.n) {
      yield { changes: [], errors: [], fullImportRequired: { reason: `The change log was trimmed: it starts at ${firstN}, after the watermark ${w.n}.` } };
      return;
    }
    const entries: LdapEntry[] = [];
    if (lastN > w.n) {
      const req = {
        base,
        scope: 'one' as const,
        filter: `(&(changeNumber>=${w.n + 1})(changeNumber<=${lastN}))`,
        attributes: ['changeNumber', 'changeType', 'targetDN', 'targetEntryUUID', 'targetUniqueId', 'newRDN', 'newSuperior'],
      };
      for await (const page of this.ctx.session.searchPages(req, 1000)) entries.push(...page);
    }
    const { chains, current } = changelogChains(entries, this.ctx.baseDN, this.ctx.scope.anchorAttribute);
    const pending = new Map<string, Pending>();
    const errors: ObjectError[] = [];
    for (const c of chains) {
      let entry: LdapEntry | undefined;
      let anchor = c.anchor;
      if (!c.deleted && !anchor) {
        // The log does not name the entry's anchor: read the entry where the log leaves it.
        const dn = current.get(c)!;
        [entry] = await this.ctx.session.search({ base: dn, scope: 'base', filter: '(objectClass=*)', attributes: this.ctx.readAttributes }).catch(() => []);
        anchor = entry ? anchorOf(entry, this.ctx.scope.anchorAttribute) : undefined;
        if (!anchor) {
          // Entries the connector does not map (an OU, a class not configured) are not its business.
          if (entry && (objectTypeOf(entry, this.ctx.scope) === undefined || !inScope(entry.dn, this.ctx.scope))) continue;
          errors.push({ code: 'object_error', location: dn, message: `Change ${c.lastChange} (${c.lastType}): ${entry ? `the entry has no ${this.ctx.scope.anchorAttribute}` : 'the entry is no longer at this DN'}; a full import will catch it.` });
          continue;
        }
      }
      if (!anchor) {
        // A delete the log names by DN only. An entry added in this delta was never imported: nothing to do.
        if (c.origin === null) continue;
        pending.set(`\u0000dn:${normalizeDn(c.origin)}`, { added: false, deleted: true, byDn: true, dn: c.origin });
        continue;
      }
      const p = pending.get(anchor) ?? { added: false, deleted: false };
      pending.set(anchor, p);
      if (c.origin === null) p.added = true;
      if (c.deleted) {
        p.deleted = true;
        p.dn = c.deletedDn;
        p.entry = undefined;
      } else {
        if (entry) p.entry = entry;
        if (c.renamed && c.origin !== null && p.previousDn === undefined) p.previousDn = c.origin;
      }
    }
    yield* emit(this.ctx, pending, options, JSON.stringify({ s: 'changelog', n: lastN } satisfies ChangelogWatermark), errors);
  }
}

/** What the change log says happened to one entry during a delta, in log order. */
export interface ChangelogChain {
  /** The entry's DN at the watermark; null when the delta added it. */
  origin: string | null;
  /** The anchor when the log names it (targetEntryUUID, or targetUniqueId with anchor nsUniqueId). */
  anchor?: string;
  renamed: boolean;
  deleted: boolean;
  /** The DN the delete was logged for. */
  deletedDn?: string;
  lastChange: string;
  lastType: string;
}

/**
 * Follow the change log's entries (in changeNumber order) per entry: a DN names the same entry from its add or
 * first mention through its renames (modrdn, newSuperior) until it is deleted or renamed away, so a delete
 * logged by DN only is traced back to the DN the entry had at the watermark (which the connector space knows),
 * and a DN reused by a new entry after a delete or a rename starts a new chain. Changes outside `baseDN` (before
 * and after) are left out. `current` gives each chain not deleted the DN where the log leaves it.
 */
export function changelogChains(entries: LdapEntry[], baseDN: string, anchorAttribute: string): { chains: ChangelogChain[]; current: Map<ChangelogChain, string> } {
  const sorted = [...entries].sort((a, b) => Number(first(a, 'changeNumber')) - Number(first(b, 'changeNumber')));
  const byDn = new Map<string, ChangelogChain>();
  const chains: ChangelogChain[] = [];
  const current = new Map<ChangelogChain, string>();
  const useUniqueId = anchorAttribute.toLowerCase() === 'nsuniqueid';
  const useEntryUuid = anchorAttribute.toLowerCase() === 'entryuuid';
  for (const e of sorted) {
    const dn = first(e, 'targetDN') ?? '';
    const type = (first(e, 'changeType') ?? '').toLowerCase();
    const newDn = type === 'modrdn' ? `${first(e, 'newRDN')},${first(e, 'newSuperior') ?? parentDn(dn)}` : dn;
    if (!isUnder(dn, baseDN) && !isUnder(newDn, baseDN)) continue;
    const key = normalizeDn(dn);
    let c = type === 'add' ? undefined : byDn.get(key);
    if (!c) {
      c = { origin: type === 'add' ? null : dn, renamed: false, deleted: false, lastChange: '', lastType: '' };
      chains.push(c);
    }
    c.lastChange = first(e, 'changeNumber') ?? '';
    c.lastType = type;
    const logged = useEntryUuid ? first(e, 'targetEntryUUID') : useUniqueId ? first(e, 'targetUniqueId') : undefined;
    if (logged) c.anchor = logged;
    byDn.delete(key);
    if (type === 'delete') {
      c.deleted = true;
      c.deletedDn = dn;
      current.delete(c);
      continue;
    }
    if (type === 'modrdn') c.renamed = true;
    byDn.set(normalizeDn(newDn), c);
    current.set(c, newDn);
  }
  return { chains, current };
}

// ---------------------------------------------------------------------------------------------------------
// usn (Active Directory)

interface UsnWatermark {
  s: 'usn';
  u: number;
  /** dsServiceName of the DC read: USNs are per DC. */
  ds: string;
  /** The DC's currentTime when taken (tombstone lifetime check). */
  t: string | null;
}

export class UsnStrategy implements DeltaStrategy {
  readonly name = 'usn' as const;
  constructor(private readonly ctx: DeltaContext) {}

  private async root(): Promise<{ usn: number; ds: string; time: string | null; config: string | null; nc: string | null }> {
    const root = await rootDse(this.ctx.session, ['highestCommittedUSN', 'dsServiceName', 'currentTime', 'configurationNamingContext', 'namingContexts', 'defaultNamingContext']);
    const usn = Number(first(root, 'highestCommittedUSN') ?? NaN);
    if (!Number.isFinite(usn)) throw new ConnectorError('configuration_invalid', 'deltaStrategy usn: the root DSE shows no highestCommittedUSN (is this Active Directory?).');
    const nc = namingContextOf(this.ctx.baseDN, [...all(root, 'namingContexts'), ...all(root, 'defaultNamingContext')]) ?? null;
    return { usn, ds: first(root, 'dsServiceName') ?? '', time: first(root, 'currentTime') ?? null, config: first(root, 'configurationNamingContext') ?? null, nc };
  }

  async capture(): Promise<string> {
    const r = await this.root();
    return JSON.stringify({ s: 'usn', u: r.usn, ds: r.ds, t: r.time } satisfies UsnWatermark);
  }

  private async tombstoneLifetimeDays(config: string | null): Promise<number> {
    if (!config) return 180;
    const [e] = await this.ctx.session
      .search({ base: `CN=Directory Service,CN=Windows NT,CN=Services,${config}`, scope: 'base', filter: '(objectClass=*)', attributes: ['tombstoneLifetime'] })
      .catch(() => []);
    const v = Number(first(e, 'tombstoneLifetime') ?? NaN);
    return Number.isFinite(v) && v > 0 ? v : 180;
  }

  async *delta(watermark: string, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    const w = parseWatermark<UsnWatermark>(watermark, 'usn');
    if ('reason' in w) {
      yield { changes: [], errors: [], fullImportRequired: w };
      return;
    }
    const r = await this.root();
    if (w.ds && r.ds && w.ds.toLowerCase() !== r.ds.toLowerCase()) {
      yield { changes: [], errors: [], fullImportRequired: { reason: `The watermark was taken on another domain controller (${w.ds}); USNs are per domain controller.` } };
      return;
    }
    if (r.usn < w.u) {
      yield { changes: [], errors: [], fullImportRequired: { reason: `The domain controller's highestCommittedUSN (${r.usn}) is below the watermark (${w.u}): it was restored.` } };
      return;
    }
    if (w.t && r.time) {
      const days = (generalizedTimeToMicros(r.time) - generalizedTimeToMicros(w.t)) / 86_400_000_000;
      const lifetime = await this.tombstoneLifetimeDays(r.config);
      if (days >= lifetime) {
        yield { changes: [], errors: [], fullImportRequired: { reason: `The watermark is ${Math.floor(days)} days old, beyond the tombstone lifetime (${lifetime} days): deletes may be lost.` } };
        return;
      }
    }
    const pending = new Map<string, Pending>();
    if (r.usn > w.u) {
      const range = `(uSNChanged>=${w.u + 1})(uSNChanged<=${r.usn})`;
      /** Entries renamed or moved since the watermark (or, without replication metadata, every changed one). */
      const movedDns: string[] = [];
      const bookkeeping = ['uSNCreated', 'replPropertyMetaData'];
      for (const base of this.ctx.scope.include) {
        const req = { base, scope: 'sub' as const, filter: `(&${wrap(classFilter(this.ctx.scope))}${range})`, attributes: [...this.ctx.readAttributes, ...bookkeeping] };
        for await (const page of this.ctx.session.searchPages(req, 1000)) {
          for (const e of page) {
            const a = anchorOf(e, this.ctx.scope.anchorAttribute);
            if (!a) continue;
            const added = Number(first(e, 'uSNCreated') ?? 0) > w.u;
            if (!added && placeChangedSince(e, w.u) !== false) movedDns.push(e.dn);
            pending.set(a, { added, deleted: false, entry: asRead(this.ctx, e, bookkeeping) });
          }
        }
      }
      // Moved out of the connector's containers (elsewhere in the domain, or into an excluded container): a
      // delete for this connector. Only entries whose place changed since the watermark can have been inside.
      const outerBase = r.nc && isUnder(this.ctx.baseDN, r.nc) ? r.nc : this.ctx.baseDN;
      const coversAll = this.ctx.scope.exclude.length === 0 && this.ctx.scope.include.some((b) => normalizeDn(b) === normalizeDn(outerBase));
      if (!coversAll) {
        const req = { base: outerBase, scope: 'sub' as const, filter: `(&${wrap(classFilter(this.ctx.scope))}${range})`, attributes: [this.ctx.scope.anchorAttribute, 'objectClass', ...bookkeeping] };
        for await (const page of this.ctx.session.searchPages(req, 1000)) {
          for (const e of page) {
            const a = anchorOf(e, this.ctx.scope.anchorAttribute);
            if (!a || pending.has(a) || inScope(e.dn, this.ctx.scope)) continue;
            if (Number(first(e, 'uSNCreated') ?? 0) > w.u || placeChangedSince(e, w.u) === false) continue;
            pending.set(a, { added: false, deleted: true, objectType: objectTypeOf(e, this.ctx.scope) });
            // AD shows it under its new DN in the groups and reports naming it: they are read again below.
            movedDns.push(e.dn);
          }
        }
      }
      // Tombstones live in CN=Deleted Objects of the naming context, outside a baseDN that names an OU.
      const deleted = {
        base: r.nc && isUnder(this.ctx.baseDN, r.nc) ? r.nc : this.ctx.baseDN,
        scope: 'sub' as const,
        filter: `(&(isDeleted=TRUE)${range})`,
        attributes: ['objectGUID', this.ctx.scope.anchorAttribute, 'lastKnownParent', 'objectClass', 'name', 'msDS-LastKnownRDN'],
        controls: [new Control(SHOW_DELETED_OID, { critical: true })],
      };
      for await (const page of this.ctx.session.searchPages(deleted, 1000)) {
        for (const e of page) {
          const a = anchorOf(e, this.ctx.scope.anchorAttribute);
          const parent = first(e, 'lastKnownParent');
          const dn = tombstoneDn(e);
          if (!a || (dn ? !inScope(dn, this.ctx.scope) : parent && !this.ctx.scope.include.some((b) => isUnder(parent, b)))) continue;
          // A tombstone keeps its objectClass: one of a class the connector does not map (an OU, a computer) is not its business.
          if (hasClasses(e) && objectTypeOf(e, this.ctx.scope) === undefined) continue;
          const p = pending.get(a);
          if (p?.added) pending.delete(a);
          else pending.set(a, { added: false, deleted: true, dn: dn ?? e.dn, objectType: objectTypeOf(e, this.ctx.scope), referencesDropped: true });
        }
      }
      // Active Directory keeps linked values (member, manager, ...) itself: the entries naming a moved or renamed
      // entry show its new DN without their own uSNChanged moving, so the search above does not return them.
      // They are read here, by the new DN the directory already shows them with.
      for (const e of await referencingEntries(this.ctx, movedDns)) {
        const a = anchorOf(e, this.ctx.scope.anchorAttribute);
        if (!a || pending.has(a)) continue;
        pending.set(a, { added: false, deleted: false, entry: e });
      }
    }
    yield* emit(this.ctx, pending, options, JSON.stringify({ s: 'usn', u: r.usn, ds: r.ds || w.ds, t: r.time } satisfies UsnWatermark));
  }
}

/** Whether the entry came with objectClass values (DirSync and tombstones may leave them out). */
export function hasClasses(e: LdapEntry): boolean {
  return all(e, 'objectClass').length > 0;
}

/** The attribute ID of the RDN (`name`) in Active Directory's replication metadata: a rename or move changes it. */
const ATT_RDN = 0x00090001;

/**
 * Whether the entry was renamed or moved after USN `since`, from its `replPropertyMetaData` (version 1:
 * 16-byte header, then 48 bytes per attribute: attid, version, time, invocation id, originating USN, local USN).
 * undefined when the metadata was not returned or cannot be read (the caller then assumes it may have moved).
 */
export function placeChangedSince(e: LdapEntry, since: number): boolean | undefined {
  const key = Object.keys(e).find((k) => k.toLowerCase() === 'replpropertymetadata');
  const v = key ? e[key] : undefined;
  const b = Array.isArray(v) ? v[0] : v;
  if (!Buffer.isBuffer(b) || b.length < 16 || b.readUInt32LE(0) !== 1) return undefined;
  const count = b.readUInt32LE(8);
  if (b.length < 16 + count * 48) return undefined;
  for (let i = 0; i < count; i++) {
    const at = 16 + i * 48;
    if (b.readUInt32LE(at) !== ATT_RDN) continue;
    return Number(b.readBigUInt64LE(at + 40)) > since;
  }
  return undefined;
}

/**
 * The DN a tombstone had before its deletion: its RDN value (`msDS-LastKnownRDN`, else the first line of `name`,
 * which AD mangles to "value\nDEL:guid") under `lastKnownParent`.
 */
export function tombstoneDn(e: LdapEntry): string | undefined {
  // DirSync gives DN values in the extended form `<GUID=...>;<SID=...>;DN`.
  const parent = first(e, 'lastKnownParent')?.replace(/^(<[^>]*>;)+/, '');
  const value = first(e, 'msDS-LastKnownRDN') ?? first(e, 'name')?.split('\n')[0];
  const type = /^([^=]+)=/.exec(e.dn)?.[1] ?? 'CN';
  if (!parent || !value) return undefined;
  return `${type}=${escapeDnValue(value)},${parent}`;
}

function escapeDnValue(v: string): string {
  return v
    .replace(/[\\,+"<>;=#]/g, (c) => `\\${c}`)
    .replace(/^ /, '\\ ')
    .replace(/ $/, '\\ ');
}

/**
 * The in-scope entries of mapped classes whose reference attributes name one of `dns` (read as a full import
 * reads them). The reference attributes searched are the configured ones the directory's schema gives DN
 * syntax, or the well-known ones when every attribute is read.
 */
export async function referencingEntries(ctx: DeltaContext, dns: string[]): Promise<LdapEntry[]> {
  if (!dns.length) return [];
  // `member;range=0-1499` (Active Directory's first slice) names `member`.
  const configured = ctx.readAttributes.filter((a) => a !== '*' && a !== '+').map((a) => a.replace(/;range=.*$/i, ''));
  const isRef = (n: string) => (ctx.scope.references ? ctx.scope.references.has(n.toLowerCase()) : !!REFERENCE_ATTRIBUTES[n.toLowerCase()]);
  const names = ctx.readAttributes.includes('*') ? [...new Set([...Object.keys(REFERENCE_ATTRIBUTES), ...configured.filter(isRef)])] : configured.filter(isRef);
  if (!names.length) return [];
  const out = new Map<string, LdapEntry>();
  for (let i = 0; i < dns.length; i += REFERENCE_BATCH) {
    const terms = dns.slice(i, i + REFERENCE_BATCH).flatMap((dn) => names.map((n) => `(${n}=${escapeFilterValue(dn)})`));
    for (const base of ctx.scope.include) {
      const req = { base, scope: 'sub' as const, filter: `(&${wrap(classFilter(ctx.scope))}(|${terms.join('')}))`, attributes: ctx.readAttributes };
      for await (const page of ctx.session.searchPages(req, 1000)) {
        for (const e of page) if (inScope(e.dn, ctx.scope) && objectTypeOf(e, ctx.scope) !== undefined) out.set(normalizeDn(e.dn), e);
      }
    }
  }
  return [...out.values()];
}

// ---------------------------------------------------------------------------------------------------------
// timestamp (modifyTimestamp)

interface TimestampWatermark {
  s: 'timestamp';
  /** modifyTimestamp floor (second precision) and the anchor@modifyTimestamp pairs at it already seen. */
  t: string;
  seen: string[];
  /** Deltas since the last anchor-set diff. */
  n: number;
}

export class TimestampStrategy implements DeltaStrategy {
  readonly name = 'timestamp' as const;
  constructor(private readonly ctx: DeltaContext) {}

  private async now(): Promise<number> {
    const root = await rootDse(this.ctx.session, ['currentTime', 'namingContexts']);
    const t = first(root, 'currentTime');
    if (t) return generalizedTimeToMicros(t);
    const nc = namingContextOf(this.ctx.baseDN, all(root, 'namingContexts'));
    const [e] = nc ? await this.ctx.session.search({ base: nc, scope: 'base', filter: '(objectClass=*)', attributes: ['contextCSN'] }).catch(() => []) : [];
    const csn = e ? maxCsn(all(e, 'contextCSN')) : null;
    return csn ? csnMicros(csn) : Date.now() * 1000;
  }

  async capture(): Promise<string> {
    const us = await this.now();
    return JSON.stringify({ s: 'timestamp', t: microsToGeneralizedTime(us - 1_000_000).slice(0, 14) + 'Z', seen: [], n: 0 } satisfies TimestampWatermark);
  }

  async *delta(watermark: string, options: DeltaImportOptions): AsyncGenerator<DeltaPage> {
    const w = parseWatermark<TimestampWatermark>(watermark, 'timestamp');
    if ('reason' in w) {
      yield { changes: [], errors: [], fullImportRequired: w };
      return;
    }
    // modifyTimestamp cannot show deletes: every Nth delta is a full read of the anchors instead, which the
    // engine turns into deletes by asking for a full import (it marks every object it did not see as deleted).
    if (w.n + 1 >= ANCHOR_DIFF_EVERY) {
      yield { changes: [], errors: [], fullImportRequired: { reason: `deltaStrategy timestamp cannot see deletes: every ${ANCHOR_DIFF_EVERY}th delta compares the full anchor set.` } };
      return;
    }
    const seen = new Set(w.seen);
    const pending = new Map<string, Pending>();
    let newest = w.t;
    const atNewest: string[] = [];
    for (const base of this.ctx.scope.include) {
      const req = { base, scope: 'sub' as const, filter: `(&${wrap(classFilter(this.ctx.scope))}(modifyTimestamp>=${w.t}))`, attributes: [...this.ctx.readAttributes, 'modifyTimestamp', 'createTimestamp'] };
      for await (const page of this.ctx.session.searchPages(req, 1000)) {
        for (const e of page) {
          const a = anchorOf(e, this.ctx.scope.anchorAttribute);
          const mt = first(e, 'modifyTimestamp') ?? w.t;
          if (!a || seen.has(`${a}@${mt}`)) continue;
          pending.set(a, { added: (first(e, 'createTimestamp') ?? '') >= w.t && first(e, 'createTimestamp') === mt, deleted: false, entry: asRead(this.ctx, e, ['modifyTimestamp', 'createTimestamp']) });
          if (mt > newest) {
            newest = mt;
            atNewest.length = 0;
          }
          if (mt === newest) atNewest.push(`${a}@${mt}`);
        }
      }
    }
    const keep = newest === w.t ? [...w.seen, ...atNewest] : atNewest;
    yield* emit(this.ctx, pending, options, JSON.stringify({ s: 'timestamp', t: newest, seen: [...new Set(keep)], n: w.n + 1 } satisfies TimestampWatermark));
  }
}
