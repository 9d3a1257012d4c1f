import { type DeltaImportOptions, type DeltaPage } from '../sdk';
import { anchorOf, classFilter } from './objects';
import { csnMicros, generalizedTimeToMicros, microsToGeneralizedTime } from './values';
import {
  all,
  ANCHOR_DIFF_EVERY,
  asRead,
  type DeltaContext,
  type DeltaStrategy,
  emit,
  first,
  maxCsn,
  namingContextOf,
  parseWatermark,
  type Pending,
  rootDse,
  wrap,
} from './delta';

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
      yield {
        changes: [],
        errors: [],
        fullImportRequired: { reason: `deltaStrategy timestamp cannot see deletes: every ${ANCHOR_DIFF_EVERY}th delta compares the full anchor set.` },
      };
      return;
    }
    const seen = new Set(w.seen);
    const pending = new Map<string, Pending>();
    let newest = w.t;
    const atNewest: string[] = [];
    for (const base of this.ctx.scope.include) {
      const req = {
        base,
        scope: 'sub' as const,
        filter: `(&${wrap(classFilter(this.ctx.scope))}(modifyTimestamp>=${w.t}))`,
        attributes: [...this.ctx.readAttributes, 'modifyTimestamp', 'createTimestamp'],
      };
      for await (const page of this.ctx.session.searchPages(req, 1000)) {
        for (const e of page) {
          const a = anchorOf(e, this.ctx.scope.anchorAttribute);
          const mt = first(e, 'modifyTimestamp') ?? w.t;
          if (!a || seen.has(`${a}@${mt}`)) continue;
          pending.set(a, {
            added: (first(e, 'createTimestamp') ?? '') >= w.t && first(e, 'createTimestamp') === mt,
            deleted: false,
            entry: asRead(this.ctx, e, ['modifyTimestamp', 'createTimestamp']),
          });
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
