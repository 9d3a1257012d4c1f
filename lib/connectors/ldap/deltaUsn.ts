import { escapeDnValue, firstRdn } from '../../core/ldapName';
import { ConnectorError, type DeltaImportOptions, type DeltaPage } from '../sdk';
import { anchorOf, classFilter, inScope, objectTypeOf, REFERENCE_ATTRIBUTES } from './objects';
import { Control, type LdapEntry } from './session';
import { escapeFilterValue, generalizedTimeToMicros, isUnder, normalizeDn } from './values';
import {
  all,
  asRead,
  type DeltaContext,
  type DeltaStrategy,
  emit,
  first,
  namingContextOf,
  parseWatermark,
  type Pending,
  REFERENCE_BATCH,
  rootDse,
  SHOW_DELETED_OID,
  wrap,
} from './delta';

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
    const root = await rootDse(this.ctx.session, [
      'highestCommittedUSN',
      'dsServiceName',
      'currentTime',
      'configurationNamingContext',
      'namingContexts',
      'defaultNamingContext',
    ]);
    const usn = Number(first(root, 'highestCommittedUSN') ?? NaN);
    if (!Number.isFinite(usn))
      throw new ConnectorError('configuration_invalid', 'deltaStrategy usn: the root DSE shows no highestCommittedUSN (is this Active Directory?).');
    const nc = namingContextOf(this.ctx.baseDN, [...all(root, 'namingContexts'), ...all(root, 'defaultNamingContext')]) ?? null;
    return {
      usn,
      ds: first(root, 'dsServiceName') ?? '',
      time: first(root, 'currentTime') ?? null,
      config: first(root, 'configurationNamingContext') ?? null,
      nc,
    };
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
      yield {
        changes: [],
        errors: [],
        fullImportRequired: { reason: `The watermark was taken on another domain controller (${w.ds}); USNs are per domain controller.` },
      };
      return;
    }
    if (r.usn < w.u) {
      yield {
        changes: [],
        errors: [],
        fullImportRequired: { reason: `The domain controller's highestCommittedUSN (${r.usn}) is below the watermark (${w.u}): it was restored.` },
      };
      return;
    }
    if (w.t && r.time) {
      const days = (generalizedTimeToMicros(r.time) - generalizedTimeToMicros(w.t)) / 86_400_000_000;
      const lifetime = await this.tombstoneLifetimeDays(r.config);
      if (days >= lifetime) {
        yield {
          changes: [],
          errors: [],
          fullImportRequired: {
            reason: `The watermark is ${Math.floor(days)} days old, beyond the tombstone lifetime (${lifetime} days): deletes may be lost.`,
          },
        };
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
        const req = {
          base,
          scope: 'sub' as const,
          filter: `(&${wrap(classFilter(this.ctx.scope))}${range})`,
          attributes: [...this.ctx.readAttributes, ...bookkeeping],
        };
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
        const req = {
          base: outerBase,
          scope: 'sub' as const,
          filter: `(&${wrap(classFilter(this.ctx.scope))}${range})`,
          attributes: [this.ctx.scope.anchorAttribute, 'objectClass', ...bookkeeping],
        };
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
  const type = firstRdn(e.dn)?.[0].type ?? 'CN';
  if (!parent || !value) return undefined;
  return `${type}=${escapeDnValue(value)},${parent}`;
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
