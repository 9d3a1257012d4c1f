import { ConnectorError, type DeltaImportOptions, type DeltaPage, type ObjectError } from '../sdk';
import { anchorOf, classFilter, inScope, objectTypeOf, REFERENCE_ATTRIBUTES } from './objects';
import { type LdapEntry } from './session';
import { csnAt, csnMicros, escapeFilterValue, generalizedTimeToMicros, isUnder, microsToGeneralizedTime, normalizeDn, parentDn } from './values';
import {
  all,
  asRead,
  capSeen,
  DEFAULT_OVERLAP,
  type DeltaContext,
  type DeltaStrategy,
  emit,
  first,
  maxCsn,
  maxString,
  namingContextOf,
  parseWatermark,
  type Pending,
  REFERENCE_BATCH,
  rootDse,
  wrap,
} from './delta';

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
      throw new ConnectorError(
        'configuration_invalid',
        `deltaStrategy accesslog: the access log ${logBase} cannot be read (${(err as Error).message}); grant the bind DN read access to it.`,
      );
    });
    if (!logEntry) throw new ConnectorError('configuration_invalid', `deltaStrategy accesslog: the access log ${logBase} was not found.`);
    return {
      nc,
      uuid: first(ncEntry, 'entryUUID') ?? null,
      logBase,
      logCsn: maxCsn(all(logEntry, 'contextCSN')),
      dataCsn: maxCsn(all(ncEntry ?? { dn: '' }, 'contextCSN')),
    };
  }

  async capture(): Promise<string> {
    const b = await this.bases();
    const nowUs = b.logCsn ? csnMicros(b.logCsn) : Date.now() * 1000;
    const f = microsToGeneralizedTime(nowUs - this.overlap);
    const log = await this.readLog(b.logBase, f);
    const dataNow = b.dataCsn ? csnMicros(b.dataCsn) : Date.now() * 1000;
    const c = csnAt(dataNow - this.overlap);
    const swept = await this.sweep(c, ['entryCSN']);
    const logFloor = capSeen(
      f,
      log.map((e) => first(e, 'reqStart')!),
    );
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
      yield {
        changes: [],
        errors: [],
        fullImportRequired: { reason: 'The directory is not the one the watermark was taken on (its naming context has another entryUUID).' },
      };
      return;
    }
    if (w.a) {
      const [still] = await this.ctx.session
        .search({ base: `reqStart=${w.a},${w.lb}`, scope: 'base', filter: '(objectClass=*)', attributes: ['1.1'] })
        .catch((err: unknown) => {
          if (err instanceof ConnectorError && err.code === 'configuration_invalid') return [];
          throw err;
        });
      if (!still) {
        yield {
          changes: [],
          errors: [],
          fullImportRequired: {
            reason: `The access log no longer reaches back to the watermark (its entry ${w.a} was purged or this is another server); a full import re-reads everything.`,
          },
        };
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
      const uuid =
        first(e, 'reqEntryUUID') ??
        all(e, 'reqOld')
          .find((x) => /^entryUUID:/i.test(x))
          ?.replace(/^entryUUID:\s*/i, '');
      if (!uuid) {
        if (isUnder(dn, this.ctx.baseDN))
          errors.push({
            code: 'object_error',
            location: dn,
            message: `The access log entry ${first(e, 'reqStart')} names no entryUUID; a full import will catch this change.`,
          });
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
