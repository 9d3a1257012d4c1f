import { ConnectorError, type DeltaImportOptions, type DeltaPage, type ObjectError } from '../sdk';
import { anchorOf, inScope, objectTypeOf } from './objects';
import { type LdapEntry } from './session';
import { isUnder, normalizeDn, parentDn } from './values';
import { type DeltaContext, type DeltaStrategy, emit, first, parseWatermark, type Pending, rootDse } from './delta';

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
    if (!Number.isFinite(lastN))
      throw new ConnectorError(
        'configuration_invalid',
        'deltaStrategy changelog: the root DSE shows no lastChangeNumber (is the retro changelog enabled and readable?).',
      );
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
      yield {
        changes: [],
        errors: [],
        fullImportRequired: { reason: `The change log ends at ${lastN}, before the watermark ${w.n} (a restored or another server).` },
      };
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
          errors.push({
            code: 'object_error',
            location: dn,
            message: `Change ${c.lastChange} (${c.lastType}): ${entry ? `the entry has no ${this.ctx.scope.anchorAttribute}` : 'the entry is no longer at this DN'}; a full import will catch it.`,
          });
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
export function changelogChains(
  entries: LdapEntry[],
  baseDN: string,
  anchorAttribute: string,
): { chains: ChangelogChain[]; current: Map<ChangelogChain, string> } {
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
