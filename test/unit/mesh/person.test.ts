import { ConfigError } from '../../../lib/core/config';
import { compileDisplayAttributes, displayNameOf } from '../../../lib/mesh/displayName';
import type { Relationship } from '../../../lib/mesh/model';
import { MeshReadModel } from '../../../lib/mesh/readModel';
import { gid, meshObject } from './meshSupport';

const rel = (n: number, type = 'manager'): Relationship => ({ type, targetId: gid(n), targetAnchor: `A${n}`, targetType: 'User' });

describe('display names (Mesh:DisplayAttributes)', () => {
  const name = (text: string | undefined, objectType: string, values: Record<string, string>) =>
    displayNameOf(
      compileDisplayAttributes(text),
      { objectType, anchorValue: 'E1' },
      (n) => values[Object.keys(values).find((k) => k.toLowerCase() === n.toLowerCase()) ?? ''],
    );

  test('defaults: User displayName, cn, givenName + sn, then the anchor; other types displayName, cn', () => {
    expect(name(undefined, 'User', { displayName: 'Ada L.', cn: 'ada', givenName: 'Ada', sn: 'Lovelace' })).toBe('Ada L.');
    expect(name(undefined, 'User', { cn: 'ada', givenName: 'Ada', sn: 'Lovelace' })).toBe('ada');
    expect(name(undefined, 'user', { givenName: 'Ada', sn: 'Lovelace' })).toBe('Ada Lovelace');
    // givenName alone is not the pair: the anchor.
    expect(name(undefined, 'User', { givenName: 'Ada' })).toBe('E1');
    expect(name(undefined, 'Group', { givenName: 'Ada', sn: 'Lovelace' })).toBe('E1');
    expect(name(undefined, 'Group', { cn: 'Admins' })).toBe('Admins');
  });

  test('the setting: types and names case-insensitive, the first choice with a value wins, + joins with a space', () => {
    const text = ' user = nickname | GIVENNAME+sn ; Group=description ';
    expect(name(text, 'User', { nickname: '', givenName: 'Li', sn: 'Lee', displayName: 'ignored' })).toBe('Li Lee');
    expect(name(text, 'User', { nickname: 'Lily', givenName: 'Li', sn: 'Lee' })).toBe('Lily');
    expect(name(text, 'Group', { description: 'All staff', cn: 'staff' })).toBe('All staff');
    // A type it does not name keeps the defaults.
    expect(name(text, 'Device', { cn: 'pc1' })).toBe('pc1');
  });

  test('a secret attribute is never a display name', () => {
    expect(name('User=password|cn', 'User', { password: 'hunter2', cn: 'ada' })).toBe('ada');
  });

  test('a malformed setting is a ConfigError naming the setting and the entry', () => {
    for (const bad of ['displayName', 'User=display name', '=cn', 'User=cn;user=sn', 'User=cn|']) {
      expect(() => compileDisplayAttributes(bad)).toThrow(ConfigError);
    }
    expect(() => compileDisplayAttributes('User=display name')).toThrow(/Mesh:DisplayAttributes.*'display'|Mesh:DisplayAttributes.*'display name'/);
  });
});

describe('MeshReadModel: incoming relationships', () => {
  test('kept through loads, changes and deletes: the reports of a manager, the groups of a member', () => {
    const m = new MeshReadModel();
    m.loadPage([
      meshObject(gid(1), 'Boss', { givenName: 'Ada', sn: 'Lovelace' }),
      meshObject(gid(2), 'Ann', {}, { relationships: [rel(1)] }),
      meshObject(gid(3), 'Bob', {}, { relationships: [rel(1), rel(1, 'mentor')] }),
      meshObject(gid(9), 'Staff', {}, { objectType: 'Group', relationships: [rel(2, 'member'), rel(3, 'member')] }),
    ]);
    const ids = (id: string) => m.referrers(id).map((r) => r.anchorValue);
    expect(ids(gid(1))).toEqual(['Ann', 'Bob']);
    expect(ids(gid(2))).toEqual(['Staff']);
    expect(ids(gid(4))).toEqual([]);
    // Bob gets another manager; Ann is deleted; the group loses Bob.
    m.applyStates([
      { id: gid(3), state: meshObject(gid(3), 'Bob', {}, { relationships: [rel(2)] }) },
      { id: gid(2), state: null },
      { id: gid(9), state: meshObject(gid(9), 'Staff', {}, { objectType: 'Group', relationships: [rel(2, 'member')] }) },
    ]);
    expect(ids(gid(1))).toEqual([]);
    // Bob still names Ann (deleted, a dangling reference until the engine turns it pending); the group too.
    expect(ids(gid(2)).sort()).toEqual(['Bob', 'Staff']);
    expect(ids(gid(3))).toEqual([]);
    expect(m.valueOf(m.get(gid(1))!, 'GIVENNAME')).toBe('Ada');
    expect(m.valueOf(m.get(gid(1))!, 'mail')).toBeUndefined();
  });

  test('a snapshot page (the compact form) loads the same index', () => {
    const a = new MeshReadModel();
    a.loadPage([meshObject(gid(1), 'Boss'), meshObject(gid(2), 'Ann', {}, { relationships: [rel(1)] })]);
    const records = [...a.records()];
    const b = new MeshReadModel();
    b.loadCompactPage(a.compactPage(records, 0, records.length));
    expect(b.referrers(gid(1)).map((r) => r.id)).toEqual([gid(2)]);
  });
});
