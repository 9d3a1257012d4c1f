import type { CsSummary } from './connectorSpace';
import { CsSummaries } from './csSummaries';
import { dnKey } from '../../mesh/model';
import { type CsObject } from '../model';
import type { CsLookup, ReferencePolicy } from '../references';

/** A row the run planned (not written yet), with its DN key computed once. */
interface Planned {
  meshId: string | null;
  dn?: string;
  /** {@link dnKey} of `dn`. */
  dnk?: string;
  deleted: boolean;
}

/**
 * A process's in-memory view of one connector's connector space: every row's summary (hash comparison,
 * joins, deletes), a DN index (references by DN), and the rows planned by the current run but not yet
 * written (a page's own objects, objects held back): references resolve against those too, so a manager
 * earlier in the same page is found.
 *
 * The summaries are exactly what storage holds ({@link set} after a write); the overlay is what this process
 * has planned on top. A failed or dry-run page drops the whole cache (the engine's `dropCaches`).
 *
 * Each object's DN key ({@link dnKey}) is computed once when the run plans it ({@link note}) and reused when it
 * is written ({@link set}), woken ({@link dnKeyOf}) and referenced ({@link anchorOfDn}), instead of once per
 * reference that names it.
 */
export class CsCache {
  /** DN key -> anchor of the summaries; `dnIndex.get(k) === a` implies summary `a` is live with a DN of key `k`. */
  private dnIndex: Map<string, string> | undefined;
  private readonly overlay = new Map<string, Planned>();
  private readonly overlayDn = new Map<string, string>();

  constructor(readonly summaries: CsSummaries) {}

  /** Record a row as written (its summary), replacing what the overlay said of it. */
  set(anchor: string, s: CsSummary): void {
    const old = this.summaries.get(anchor);
    this.summaries.set(anchor, s);
    const o = this.overlay.get(anchor);
    if (this.dnIndex) {
      if (old?.dn) {
        const k = old.dn === s.dn && o?.dn === s.dn && o.dnk !== undefined ? o.dnk : dnKey(old.dn);
        if (this.dnIndex.get(k) === anchor) this.dnIndex.delete(k);
      }
      if (s.dn && !s.deleted) this.dnIndex.set(o?.dn === s.dn && o.dnk !== undefined ? o.dnk : dnKey(s.dn), anchor);
    }
    if (o) {
      this.overlay.delete(anchor);
      if (o.dnk !== undefined && this.overlayDn.get(o.dnk) === anchor) this.overlayDn.delete(o.dnk);
    }
  }

  /** Note a row the run planned (not written yet). */
  note(row: CsObject): void {
    const p: Planned = { meshId: row.meshId, dn: row.dn, deleted: !!row.deleted };
    if (row.dn) {
      p.dnk = dnKey(row.dn);
      if (!row.deleted) this.overlayDn.set(p.dnk, row.anchor);
    }
    this.overlay.set(row.anchor, p);
  }

  /** The DN key of a planned row's DN (computed when it was noted), else computed now. */
  dnKeyOf(anchor: string, dn: string): string {
    const o = this.overlay.get(anchor);
    return o?.dn === dn && o.dnk !== undefined ? o.dnk : dnKey(dn);
  }

  private dns(): Map<string, string> {
    if (!this.dnIndex) {
      this.dnIndex = new Map();
      for (const [anchor, dn, deleted] of this.summaries.dnsOf()) if (!deleted) this.dnIndex.set(dnKey(dn), anchor);
    }
    return this.dnIndex;
  }

  /** Whether `anchor`'s current state (planned, else written) is live with a DN whose key is `key`. */
  private liveAt(anchor: string, key: string, fromIndex: boolean): boolean {
    const o = this.overlay.get(anchor);
    if (o) return !o.deleted && o.dnk === key;
    const s = this.summaries.get(anchor);
    if (!s || s.deleted || !s.dn) return false;
    // The DN index follows the summaries (set), so its entry's key is the summary's; an overlay entry written
    // since may have left an old key in overlayDn: that one is checked.
    return fromIndex || dnKey(s.dn) === key;
  }

  anchorOfDn(key: string): string | undefined {
    // An entry renamed since: its old DN names nothing any more.
    const planned = this.overlayDn.get(key);
    if (planned !== undefined && this.liveAt(planned, key, false)) return planned;
    const written = this.dns().get(key);
    if (written !== undefined && this.liveAt(written, key, true)) return written;
    return undefined;
  }

  /** The object with this anchor (planned, else written): undefined when absent or deleted. Not to be changed. */
  entry(anchor: string): { readonly meshId: string | null; readonly dn?: string } | undefined {
    const e = this.overlay.get(anchor) ?? this.summaries.brief(anchor);
    return e && !e.deleted ? e : undefined;
  }

  /** The lookup the planner resolves this connector's references with. */
  lookup(connectorId: string, policy: ReferencePolicy): CsLookup {
    return {
      connectorId,
      policy,
      anchorOfDn: (key) => this.anchorOfDn(key),
      entry: (anchor) => this.entry(anchor),
    };
  }
}

/** How many objects a connector space holds now (its summaries less the deleted): a threshold's percent base. */
export function liveObjects(summaries: ReadonlyMap<string, CsSummary>): number {
  if (summaries instanceof CsSummaries) return summaries.liveCount();
  let n = 0;
  for (const s of summaries.values()) if (!s.deleted) n++;
  return n;
}
