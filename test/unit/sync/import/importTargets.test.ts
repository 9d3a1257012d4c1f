import { deprovisioningSettings } from '../../../../lib/sync/deprovisioning';
import { exportTargets, exportedType, goneAnchors, goneRecord, previewItems } from '../../../../lib/sync/import/importTargets';
import type { CsObject } from '../../../../lib/sync/model';
import type { MeshObject } from '../../../../lib/mesh/model';
import type { StoredRule } from '../../../../lib/storage/rules';
import { anchoredCsObjectId } from '../../../../lib/sync/space/csIds';

const row = (over: Partial<CsObject> = {}): CsObject => ({
  anchor: 'uid=e1,ou=x',
  objectType: 'User',
  dn: 'uid=e1,ou=x',
  attributes: { title: 'Engineer', employeeType: 'staff' },
  hash: 'h',
  rulesHash: 'r',
  meshId: 'm1',
  updatedOn: '2026-01-01T00:00:00.000Z',
  ...over,
});
const doc = (id: string, links: Record<string, string>): MeshObject =>
  ({ id, objectType: 'User', anchorValue: id, attributes: {}, contributions: {}, links }) as unknown as MeshObject;
const flow = (connectorId: string, direction: 'inbound' | 'outbound', isEnabled = true) =>
  ({ ruleType: 'FlowRule', connectorId, direction, isEnabled }) as unknown as StoredRule;

describe('an import plan: what each target would get', () => {
  it('the targets are the connectors with an enabled outbound flow rule, in id order', () => {
    const rules = [
      flow('c', 'outbound'),
      flow('a', 'outbound'),
      flow('a', 'outbound'),
      flow('b', 'inbound'),
      flow('d', 'outbound', false),
      { ruleType: 'JoinRule', connectorId: 'e' } as unknown as StoredRule,
    ];
    expect(exportTargets(rules)).toEqual(['a', 'c']);
    expect(exportTargets([])).toEqual([]);
    expect(exportedType({})).toBe('User');
    expect(exportedType({ objectType: 'Group' })).toBe('Group');
  });

  it('a mesh object the page removes: its anchor in each target it is linked to', () => {
    const pairs = [
      { before: doc('m1', { ldap: 'uid=e1', hr: 'E1' }), after: null },
      { before: doc('m2', { hr: 'E2' }), after: null },
      { before: doc('m3', { ldap: 'uid=e3' }), after: doc('m3', { ldap: 'uid=e3' }) },
      { before: null, after: doc('m4', {}) },
    ];
    expect(goneAnchors(pairs, 'ldap')).toEqual(['uid=e1']);
    expect(goneAnchors(pairs, 'ad')).toEqual([]);
  });

  it('a leaver becomes the delete the target is configured for', () => {
    const r = goneRecord(deprovisioningSettings({}, 'ldap'), row())!;
    expect(r).toMatchObject({ key: 'cs:uid=e1,ou=x', change: { kind: 'delete', anchor: 'uid=e1,ou=x' }, doc: null, values: {} });
    const [item] = previewItems('ldap', null, [r]);
    expect(item).toEqual({
      target: 'connector',
      connectorId: 'ldap',
      operation: 'Delete',
      csObjectId: anchoredCsObjectId('ldap', 'uid=e1,ou=x'),
      meshObjectId: 'm1',
      anchor: 'uid=e1,ou=x',
      dn: 'uid=e1,ou=x',
      attributes: { title: { old: 'Engineer', new: null }, employeeType: { old: 'staff', new: null } },
      outcome: 'planned',
      error: null,
    });
  });

  it('or the update writing its disable values; with a grace the same change is listed (sent when the grace ends)', () => {
    const settings = deprovisioningSettings({ deprovisioning: { action: 'disable', disableAttributes: { employeeType: 'disabled' }, graceDays: 7 } }, 'ldap');
    const [item] = previewItems('ldap', null, [goneRecord(settings, row())!]);
    expect(item).toMatchObject({ operation: 'Update', attributes: { employeeType: { old: 'staff', new: 'disabled' } }, outcome: 'planned' });
    expect(Object.keys(item.attributes)).toEqual(['employeeType']);
    expect(item).not.toHaveProperty('key');
    expect(item).not.toHaveProperty('fp');
    // Pending (inside a grace already) is still listed; a pending one found again is the same change.
    const pending = row({ deprovisioned: { state: 'pending', reason: 'gone', at: '2026-01-01T00:00:00.000Z', due: '2026-01-08T00:00:00.000Z' } });
    expect(goneRecord(settings, pending)?.change.kind).toBe('update');
  });

  it('nothing for action none, an object already deleted, disabled or left', () => {
    expect(goneRecord(deprovisioningSettings({ deprovisioning: { action: 'none' } }, 'ldap'), row())).toBeNull();
    const del = deprovisioningSettings({}, 'ldap');
    expect(goneRecord(del, row({ deleted: true }))).toBeNull();
    expect(goneRecord(del, row({ deprovisioned: { state: 'disabled', reason: 'gone', at: '2026-01-01T00:00:00.000Z' } }))).toBeNull();
    expect(goneRecord(del, row({ deprovisioned: { state: 'none', reason: 'gone', at: '2026-01-01T00:00:00.000Z' } }))).toBeNull();
  });
});
