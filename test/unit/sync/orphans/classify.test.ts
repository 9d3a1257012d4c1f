import { deprovisioningSettings, type DeprovisioningSettings } from '../../../../lib/sync/deprovisioning';
import type { CsObject } from '../../../../lib/sync/model';
import { classifyOrphan, classifyOrphans, sweepRefusal, sweepTargets, targetStateOf, type OrphanInputs } from '../../../../lib/sync/orphans/classify';

/**
 * The orphan classification (pure): which connector-space objects of a target are joined to no active identity,
 * why, since when, whether excluded, and what a sweep changes.
 */
const now = new Date('2026-06-10T12:00:00.000Z');
const DAY = 86_400_000;
const ago = (days: number) => new Date(now.getTime() - days * DAY).toISOString();
const row = (anchor: string, extra: Partial<CsObject> = {}): CsObject => ({
  anchor,
  objectType: 'User',
  attributes: { cn: anchor, employeeType: 'active' },
  hash: 'h',
  rulesHash: 'r',
  meshId: null,
  updatedOn: ago(5),
  importedOn: ago(4),
  ...extra,
});
const disable = (extra: Record<string, unknown> = {}): DeprovisioningSettings =>
  deprovisioningSettings({ deprovisioning: { action: 'disable', disableAttributes: { employeeType: 'disabled' }, graceDays: 2, ...extra } }, 'ldap');
const inputs = (extra: Partial<OrphanInputs> = {}): OrphanInputs => ({
  live: new Set(['m-live']),
  tombstones: new Map([
    ['m-old', ago(3)],
    ['m-new', ago(1)],
  ]),
  disconnected: new Map(),
  keeps: new Map(),
  settings: disable(),
  objectType: 'User',
  now,
  ...extra,
});

describe('classifyOrphan', () => {
  test('a disconnector (no mesh object) is an orphan since its last import, or since the deprovisioning left it', () => {
    expect(classifyOrphan(row('a'), inputs())).toMatchObject({ reason: 'disconnector', since: ago(4), targetState: 'enabled', excluded: null });
    const left = row('b', { deprovisioned: { state: 'none', reason: 'gone', at: ago(2) } });
    expect(classifyOrphan(left, inputs())).toMatchObject({ reason: 'disconnector', since: ago(2) });
  });

  test('joined to a live mesh object: not an orphan; to a tombstone: an orphan only once its grace is over', () => {
    expect(classifyOrphan(row('a', { meshId: 'm-live' }), inputs())).toBeNull();
    expect(classifyOrphan(row('b', { meshId: 'm-new' }), inputs())).toBeNull();
    expect(classifyOrphan(row('c', { meshId: 'm-old' }), inputs())).toMatchObject({ reason: 'tombstone', since: ago(1) });
    // Tombstone ids are compared lower-cased.
    expect(classifyOrphan(row('d', { meshId: 'M-OLD' }), inputs())).toMatchObject({ reason: 'tombstone' });
    // Without a grace a tombstone is an orphan at once.
    expect(classifyOrphan(row('e', { meshId: 'm-new' }), inputs({ settings: disable({ graceDays: 0 }) }))).toMatchObject({
      reason: 'tombstone',
      since: ago(1),
    });
  });

  test('a pending deprovisioning past its due time is overdue (even with a live mesh object); one still due later is not an orphan', () => {
    const pending = (due: string, meshId: string) => row('p', { meshId, deprovisioned: { state: 'pending', reason: 'condition', at: ago(3), due } });
    expect(classifyOrphan(pending(ago(0.5), 'm-live'), inputs())).toMatchObject({ reason: 'overdue', since: ago(0.5) });
    expect(classifyOrphan(pending(ago(0.5), 'm-old'), inputs())).toMatchObject({ reason: 'overdue' });
    expect(classifyOrphan(pending(ago(-0.5), 'm-old'), inputs())).toBeNull();
    expect(classifyOrphan(pending(ago(-0.5), 'm-live'), inputs())).toBeNull();
  });

  test('joined to a mesh object that is neither live nor a tombstone: gone', () => {
    expect(classifyOrphan(row('a', { meshId: 'm-purged' }), inputs())).toMatchObject({ reason: 'gone', since: ago(5) });
    expect(classifyOrphan(row('a', { meshId: 'm-purged' }), inputs())?.row.meshId).toBe('m-purged');
  });

  test('not orphans: deleted objects, another object type, and objects the engine disabled as leavers', () => {
    expect(classifyOrphan(row('a', { deleted: true }), inputs())).toBeNull();
    expect(classifyOrphan(row('g', { objectType: 'Group' }), inputs())).toBeNull();
    expect(classifyOrphan(row('d', { deprovisioned: { state: 'disabled', reason: 'gone', at: ago(1), written: ['employeeType'] } }), inputs())).toBeNull();
  });

  test('an explicit disconnector and a kept object are listed as excluded, with who and when; a keep wins', () => {
    const i = inputs({
      disconnected: new Map([
        ['x', { by: 'op@example.test', on: ago(1) }],
        ['k', { by: 'op@example.test', on: ago(1) }],
      ]),
      keeps: new Map([['k', { by: 'admin@example.test', on: ago(2), note: 'break-glass' }]]),
    });
    expect(classifyOrphan(row('x'), i)?.excluded).toEqual({ reason: 'explicitDisconnector', by: 'op@example.test', on: ago(1), note: null });
    expect(classifyOrphan(row('k'), i)?.excluded).toEqual({ reason: 'keep', by: 'admin@example.test', on: ago(2), note: 'break-glass' });
    // A keep holds for a joined orphan too; an ignore decision only for an unjoined object.
    const kept = inputs({ keeps: new Map([['t', { by: 'a', on: ago(1), note: null }]]), disconnected: new Map([['u', { by: 'a', on: ago(1) }]]) });
    expect(classifyOrphan(row('t', { meshId: 'm-old' }), kept)?.excluded?.reason).toBe('keep');
    expect(classifyOrphan(row('u', { meshId: 'm-old' }), kept)?.excluded).toBeNull();
  });
});

describe('targetStateOf', () => {
  test('the disable values as last imported, compared case-insensitively', () => {
    expect(targetStateOf({ EmployeeType: 'DISABLED' }, disable())).toBe('disabled');
    expect(targetStateOf({ employeeType: 'active' }, disable())).toBe('enabled');
    expect(targetStateOf({}, disable())).toBe('enabled');
  });
  test("AD's userAccountControl bit 2 when imported; no disable values to compare: unknown", () => {
    const ad = deprovisioningSettings({}, 'active_directory');
    expect(targetStateOf({ userAccountControl: 514 }, ad)).toBe('disabled');
    expect(targetStateOf({ userAccountControl: '512' }, ad)).toBe('enabled');
    expect(targetStateOf({ cn: 'x' }, ad)).toBe('unknown');
    expect(targetStateOf({ cn: 'x' }, deprovisioningSettings({}, 'sql'))).toBe('unknown');
  });
});

describe('classifyOrphans and sweepTargets', () => {
  const rows = [
    row('zeta'),
    row('Alpha'),
    row('kept'),
    row('off', { attributes: { employeeType: 'disabled' } }),
    row('linked', { meshId: 'm-live' }),
    row('grave', { meshId: 'm-old', deprovisioned: { state: 'disabled', reason: 'condition', at: ago(4), written: ['employeeType'] } }),
  ];
  const i = inputs({ keeps: new Map([['kept', { by: 'a', on: ago(1), note: null }]]) });

  test('orphans in anchor order (code units), only the orphans', () => {
    expect(classifyOrphans(rows, i).map((o) => `${o.row.anchor}:${o.reason}`)).toEqual([
      'Alpha:disconnector',
      'grave:tombstone',
      'kept:disconnector',
      'off:disconnector',
      'zeta:disconnector',
    ]);
  });

  test('a disabling sweep takes the orphans not excluded and not disabled already; a deleting one every orphan not excluded', () => {
    const orphans = classifyOrphans(rows, i);
    expect(sweepTargets(orphans, i.settings).map((r) => r.anchor)).toEqual(['Alpha', 'zeta']);
    expect(sweepTargets(orphans, disable({ orphanAction: 'delete' })).map((r) => r.anchor)).toEqual(['Alpha', 'grave', 'off', 'zeta']);
  });
});

describe('sweepRefusal', () => {
  test('no export target, or a disabling sweep without disable values, is refused with a message naming the way out', () => {
    expect(sweepRefusal('HR', disable(), false)).toMatch(/^Connector 'HR' is not an export target/);
    const none = deprovisioningSettings({ deprovisioning: { action: 'delete' } }, 'sql');
    expect(sweepRefusal('Table', none, true)).toMatch(/has no disable action.*disableAttributes.*orphanAction/);
    expect(sweepRefusal('Table', { ...none, orphanAction: 'delete' }, true)).toBeNull();
    expect(sweepRefusal('Directory', disable(), true)).toBeNull();
    // Active Directory disables by default (accountDisabled).
    expect(sweepRefusal('AD', deprovisioningSettings({}, 'active_directory'), true)).toBeNull();
  });
});
