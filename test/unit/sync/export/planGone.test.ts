import { planGone } from '../../../../lib/sync/export/exportDeletes';
import type { DeprovisioningSettings } from '../../../../lib/sync/deprovisioning';
import type { CsObject } from '../../../../lib/sync/model';

/**
 * planGone: what an export does with target objects whose mesh object is gone. The deletes pass applies it,
 * its dry run lists it, and the connector space's next-export view shows it, so one case has one answer.
 */
const at = new Date('2026-06-01T12:00:00.000Z');
const row = (anchor: string, extra: Partial<CsObject> = {}): CsObject => ({
  anchor,
  objectType: 'User',
  attributes: { status: 'active' },
  hash: 'h',
  rulesHash: 'r',
  meshId: `m-${anchor}`,
  updatedOn: '2026-01-01T00:00:00.000Z',
  ...extra,
});
const settings = (s: Partial<DeprovisioningSettings> = {}): DeprovisioningSettings => ({
  action: 'delete',
  disableAttributes: {},
  graceDays: 0,
  onConditionFalse: false,
  orphanAction: 'disable',
  ...s,
});
const rows = (...list: CsObject[]) => new Map(list.map((r) => [r.anchor, r]));
const anchors = (list: CsObject[]) => list.map((r) => r.anchor);

describe('planGone', () => {
  it('no grace: deleted, disabled or left as the action says', () => {
    const all = rows(row('a'), row('b'));
    expect(anchors(planGone(settings(), ['a', 'b'], all, new Map(), at).deletes)).toEqual(['a', 'b']);
    expect(anchors(planGone(settings({ action: 'disable', disableAttributes: { status: 'disabled' } }), ['a'], all, new Map(), at).disables)).toEqual(['a']);
    expect(anchors(planGone(settings({ action: 'none' }), ['a'], all, new Map(), at).left)).toEqual(['a']);
  });

  it('a grace: marked pending, due graceDays after the tombstone; applied once due; a pending one not yet due waits unmarked again', () => {
    const s = settings({ graceDays: 2 });
    const fresh = planGone(s, ['a'], rows(row('a')), new Map([['m-a', '2026-06-01T00:00:00.000Z']]), at);
    expect(fresh.deletes).toEqual([]);
    expect(fresh.marks).toEqual([
      expect.objectContaining({ anchor: 'a', deprovisioned: { state: 'pending', reason: 'gone', at: at.toISOString(), due: '2026-06-03T00:00:00.000Z' } }),
    ]);
    // Deleted longer ago than the grace: applied at once.
    expect(anchors(planGone(s, ['a'], rows(row('a')), new Map([['m-a', '2026-05-01T00:00:00.000Z']]), at).deletes)).toEqual(['a']);
    const waiting = row('a', { deprovisioned: { state: 'pending', reason: 'gone', at: '2026-06-01T00:00:00.000Z', due: '2026-06-03T00:00:00.000Z' } });
    expect(planGone(s, ['a'], rows(waiting), new Map(), at)).toEqual({ deletes: [], disables: [], left: [], marks: [], lapsed: [] });
    const due = row('a', { deprovisioned: { state: 'pending', reason: 'gone', at: '2026-05-01T00:00:00.000Z', due: '2026-05-03T00:00:00.000Z' } });
    expect(anchors(planGone(s, ['a'], rows(due), new Map(), at).deletes)).toEqual(['a']);
  });

  it('already disabled while linked: unlinked (lapsed), nothing sent; skipped rows are left out', () => {
    const disabled = row('a', { deprovisioned: { state: 'disabled', reason: 'condition', at: '2026-05-01T00:00:00.000Z' } });
    expect(anchors(planGone(settings(), ['a'], rows(disabled), new Map(), at).lapsed)).toEqual(['a']);
    expect(planGone(settings(), ['a', 'b'], rows(row('a'), row('b')), new Map(), at, (r) => r.anchor === 'a').deletes.map((r) => r.anchor)).toEqual(['b']);
  });
});
