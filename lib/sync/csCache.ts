import type { CsSummary } from './connectorSpace';
import { dnKey } from '../mesh/model';
import { type CsObject } from './model';
import type { CsLookup, ReferencePolicy } from './references';

/**
 * A process's in-memory view of one connector's connector space: every row's summary (hash comparison,
 * joins, deletes), a DN index (references by DN), and the rows planned by the current run but not yet
 * written (a page's own objects, objects held back): references resolve against those too, so a manager
 * earlier in the same page is found.
 *
 * The summaries are exactly what storage holds ({@link set} after a write); the overlay is what this process
 * has planned on top. A failed or dry-run page drops the whole cache (the engine's `dropCaches`).
 */
export class CsCache {
  private dnIndex: Map<string, string> | undefined;
  private readonly overlay = new Map<string, { meshId: string | null; dn?: string; deleted: boolean }>();
  private readonly overlayDn = new Map<string, string>();

  constructor(readonly summaries: Map<string, CsSummary>) {}

  /** Record a row as written (its summary), replacing what the overlay said of it. */
  set(anchor: string, s: CsSummary): void {
    const old = this.summaries.get(anchor);
    this.summaries.set(anchor, s);
    if (this.dnIndex) {
      if (old?.dn) {
        const k = dnKey(old.dn);
        if (this.dnIndex.get(k) === anchor) this.dnIndex.delete(k);
      }
      if (s.dn && !s.deleted) this.dnIndex.set(dnKey(s.dn), anchor);
    }
    const o = this.overlay.get(anchor);
    if (o) {
      this.overlay.delete(anchor);
      if (o.dn) {
        const k = dnKey(o.dn);
        if (this.overlayDn.get(k) === anchor) this.overlayDn.delete(k);
      }
    }
  }

  /** Note a row the run planned (not written yet). */
  note(row: CsObject): void {
    this.overlay.set(row.anchor, { meshId: row.meshId, dn: row.dn, deleted: !!row.deleted });
    if (row.dn && !row.deleted) this.overlayDn.set(dnKey(row.dn), row.anchor);
  }

  private current(anchor: string): { meshId: string | null; dn?: string; deleted: boolean } | undefined {
    return this.overlay.get(anchor) ?? this.summaries.get(anchor);
  }

  private dns(): Map<string, string> {
    if (!this.dnIndex) {
      this.dnIndex = new Map();
      for (const [anchor, s] of this.summaries) if (s.dn && !s.deleted) this.dnIndex.set(dnKey(s.dn), anchor);
    }
    return this.dnIndex;
  }

  anchorOfDn(key: string): string | undefined {
    for (const a of [this.overlayDn.get(key), this.dns().get(key)]) {
      if (a === undefined) continue;
      const e = this.current(a);
      // An entry renamed since: its old DN names nothing any more.
      if (e && !e.deleted && e.dn && dnKey(e.dn) === key) return a;
    }
    return undefined;
  }

  entry(anchor: string): { meshId: string | null; dn?: string } | undefined {
    const e = this.current(anchor);
    return e && !e.deleted ? { meshId: e.meshId, dn: e.dn } : undefined;
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
