import { dnKey, type MeshObject } from '../../../lib/mesh/model';
import {
  applyConnectorReferences,
  dedupeComposed,
  referencePolicy,
  referenceValuesFor,
  refreshConnectorReferences,
  type CsLookup,
} from '../../../lib/sync/references';
import type { Rule } from '../../../lib/storage/rules';
import { gid, meshObject } from '../mesh/meshSupport';

/**
 * References resolved through the connector space, as pure logic: a lookup over an in-memory connector space
 * (anchor -> mesh id, DN -> anchor) and an index of mesh objects stand in for the engine's caches.
 */
const C = 'c0000000-0000-4000-8000-0000000000aa';
const OTHER = 'c0000000-0000-4000-8000-0000000000bb';

function space(rows: { anchor: string; dn?: string; meshId: string | null }[], kind: 'ldap' | 'sql' = 'ldap'): CsLookup & { rows: typeof rows } {
  return {
    rows,
    connectorId: C,
    policy: referencePolicy(C, kind, {}, []),
    anchorOfDn: (key) => rows.find((r) => r.dn && dnKey(r.dn) === key)?.anchor,
    entry: (anchor) => {
      const r = rows.find((x) => x.anchor === anchor);
      return r ? { meshId: r.meshId, dn: r.dn } : undefined;
    },
  };
}

const index = (docs: MeshObject[]) => ({
  info: (id: string) =>
    docs.find((d) => d.id === id) && { objectType: docs.find((d) => d.id === id)!.objectType, anchorValue: docs.find((d) => d.id === id)!.anchorValue },
});

describe('references through the connector space', () => {
  const boss = meshObject(gid(1), 'boss');
  const peer = meshObject(gid(2), 'peer');
  const me = meshObject(gid(3), 'me');
  const ix = index([boss, peer, me]);

  test('a DN resolves to the mesh object joined to the entry with that DN, whatever its case and blanks', () => {
    const cs = space([{ anchor: 'a-boss', dn: 'uid=Boss,ou=People,dc=x', meshId: boss.id }]);
    const doc = structuredClone(me);
    applyConnectorReferences(doc, cs, ix, { manager: ['UID=boss, OU=people,dc=x'] });
    expect(doc.relationships).toEqual([
      { type: 'manager', targetId: boss.id, targetAnchor: 'boss', targetType: 'User', c: C, ca: 'a-boss', v: 'uid=boss,ou=people,dc=x', by: `@dn:${C}` },
    ]);
    expect(doc.pendingReferences).toEqual([]);
  });

  test('an unknown DN, or an entry joined to no mesh object, waits; a renamed entry keeps the relationship; a deleted one waits again', () => {
    const cs = space([{ anchor: 'a-peer', dn: 'uid=peer,dc=x', meshId: null }]);
    const doc = structuredClone(me);
    applyConnectorReferences(doc, cs, ix, { manager: ['uid=later,dc=x'], seeAlso: ['uid=peer,dc=x'] });
    expect(doc.relationships).toEqual([]);
    expect(doc.pendingReferences.map((p) => [p.type, p.value, p.by])).toEqual([
      ['manager', 'uid=later,dc=x', `@dn:${C}`],
      ['seeAlso', 'uid=peer,dc=x', `@dn:${C}`],
    ]);
    // The peer joins a mesh object; the later one arrives: a refresh (no values needed) resolves both.
    cs.rows[0].meshId = peer.id;
    cs.rows.push({ anchor: 'a-later', dn: 'uid=later,dc=x', meshId: boss.id });
    refreshConnectorReferences(doc, cs, ix);
    expect(doc.relationships.map((r) => [r.type, r.targetId])).toEqual([
      ['manager', boss.id],
      ['seeAlso', peer.id],
    ]);
    expect(doc.pendingReferences).toEqual([]);
    // The boss's entry is renamed: the relationship holds (it remembers the anchor).
    cs.rows[1].dn = 'uid=renamed,dc=x';
    refreshConnectorReferences(doc, cs, ix);
    expect(doc.relationships.map((r) => r.targetId)).toContain(boss.id);
    // Then deleted: the relationship goes back to waiting for its value.
    cs.rows.splice(1, 1);
    refreshConnectorReferences(doc, cs, ix);
    expect(doc.relationships.map((r) => r.type)).toEqual(['seeAlso']);
    expect(doc.pendingReferences.map((p) => [p.type, p.value])).toEqual([['manager', 'uid=later,dc=x']]);
  });

  test("another connector's references and the composer's are kept; the composer's duplicate of a connector's goes", () => {
    const cs = space([{ anchor: 'a-boss', dn: 'uid=boss,dc=x', meshId: boss.id }]);
    const doc = structuredClone(me);
    doc.relationships = [
      { type: 'manager', targetId: boss.id, targetAnchor: 'boss', targetType: 'User' },
      { type: 'buddy', targetId: peer.id, targetAnchor: 'peer', targetType: 'User', c: OTHER, ca: 'x', v: 'x', by: `@a:${OTHER}` },
    ];
    applyConnectorReferences(doc, cs, ix, { manager: ['uid=boss,dc=x', 'uid=BOSS,dc=x'] });
    expect(doc.relationships.map((r) => [r.type, r.targetId, r.c])).toEqual([
      ['buddy', peer.id, OTHER],
      ['manager', boss.id, C],
    ]);
    // With no values (the object was deleted), only this connector's go.
    applyConnectorReferences(doc, cs, ix, {});
    expect(doc.relationships.map((r) => r.c)).toEqual([OTHER]);
    expect(dedupeComposed([{ type: 't', targetId: '1', targetAnchor: 'a', targetType: 'User' }])).toHaveLength(1);
  });

  test('SQL: values are anchors (case kept); a rename rule names the type; a self reference makes nothing', () => {
    const rename: Rule = {
      ruleId: 'r',
      ruleName: 'n',
      ruleType: 'MeshComposerRule',
      connectorId: C,
      relationshipType: 'manager',
      sourceAttribute: 'manager_id',
      targetAttribute: null,
      transformScript: null,
      priority: 100,
      isEnabled: true,
      confidence: null,
      createdOn: '',
      updatedOn: '',
    } as unknown as Rule;
    const cs = {
      ...space(
        [
          { anchor: 'E001', meshId: boss.id },
          { anchor: 'E003', meshId: me.id },
        ],
        'sql',
      ),
      policy: referencePolicy(C, 'sql', {}, [rename]),
    };
    const doc = structuredClone(me);
    applyConnectorReferences(doc, cs, ix, { manager_id: ['E001'], buddy_id: ['e001', 'E003'] });
    expect(doc.relationships.map((r) => [r.type, r.targetId])).toEqual([['manager', boss.id]]);
    expect(doc.pendingReferences.map((p) => [p.type, p.value, p.by])).toEqual([['buddy_id', 'e001', `@a:${C}`]]);
  });

  test('the policy: directories by DN, SQL by anchor, a file connector by its column settings', () => {
    expect(referencePolicy(C, 'active_directory', {}, []).kind('member')).toBe('dn');
    expect(referencePolicy(C, 'sql', {}, []).targetKind).toBe('anchor');
    const file = referencePolicy(
      C,
      'custom',
      {
        implementation: 'file',
        settings: {
          dnColumn: 'dn',
          referenceColumns: {
            boss: 'User',
            mgrDn: { objectType: 'User', resolveBy: 'dn' },
            byMail: { objectType: 'User', resolveBy: 'attribute', attribute: 'mail' },
          },
        },
      },
      [],
    );
    expect([file.kind('boss'), file.kind('mgrDn'), file.kind('byMail'), file.targetKind]).toEqual(['anchor', 'dn', null, 'dn']);
  });

  test("which values are DNs, compared as DNs: a directory's DN attributes and references, a file's DN reference columns, never SQL", () => {
    const ldap = referencePolicy(C, 'ldap', {}, []);
    expect(
      ['manager', 'Member', 'uniqueMember', 'secretary', 'owner', 'managedBy', 'seeAlso', 'dn', 'distinguishedName', 'container'].filter((n) =>
        ldap.dnValued(n),
      ),
    ).toHaveLength(10);
    // Another DN-syntax attribute of the directory's schema: when the connector marked it a reference on the object.
    expect(ldap.dnValued('roleOccupant')).toBe(false);
    expect(ldap.dnValued('roleOccupant', ['roleOccupant'])).toBe(true);
    expect(ldap.dnValued('ROLEOCCUPANT', ['roleOccupant'])).toBe(true);
    expect(['cn', 'mail', 'description', 'departmentNumber'].some((n) => ldap.dnValued(n, ['manager']))).toBe(false);
    expect(referencePolicy(C, 'active_directory', {}, []).dnValued('managedBy')).toBe(true);
    // SQL and CSV/JSON targets: plain strings, even a column named like a directory attribute.
    for (const type of ['sql', 'custom']) {
      const p = referencePolicy(C, type, {}, []);
      expect(['manager', 'dn', 'member', 'manager_id'].some((n) => p.dnValued(n, ['manager']))).toBe(false);
    }
    const file = referencePolicy(
      C,
      'custom',
      { implementation: 'file', settings: { referenceColumns: { boss: 'User', mgrDn: { objectType: 'User', resolveBy: 'dn' } } } },
      [],
    );
    expect([file.dnValued('mgrDn'), file.dnValued('boss'), file.dnValued('manager')]).toEqual([true, false, false]);
  });

  test('a DN key stored by an earlier version (escapes as written) still resolves, and is waited for under the key of today', () => {
    const cs = space([{ anchor: 'a-boss', dn: 'uid=E1,ou=Sales\\2C EMEA,dc=x', meshId: boss.id }]);
    const doc = structuredClone(me);
    doc.pendingReferences = [{ type: 'manager', value: 'uid=e1,ou=sales\\, emea,dc=x', by: `@dn:${C}`, c: C }];
    refreshConnectorReferences(doc, cs, ix);
    expect(doc.relationships.map((r) => [r.type, r.targetId, r.v])).toEqual([['manager', boss.id, 'uid=e1,ou=sales\\2c emea,dc=x']]);
    expect(doc.pendingReferences).toEqual([]);
  });

  test("an export writes each related object's connector-space object in the target, and counts the ones not there yet", () => {
    const doc = structuredClone(me);
    doc.relationships = [
      { type: 'member', targetId: boss.id, targetAnchor: 'boss', targetType: 'User' },
      { type: 'member', targetId: peer.id, targetAnchor: 'peer', targetType: 'User' },
      { type: 'manager', targetId: boss.id, targetAnchor: 'boss', targetType: 'User' },
    ];
    const links = new Map([[boss.id, 'a-boss']]);
    const dns = new Map([['a-boss', 'cn=Boss,ou=T']]);
    expect(
      referenceValuesFor(
        doc,
        'member',
        'dn',
        (id) => links.get(id),
        (a) => dns.get(a),
      ),
    ).toEqual({ values: ['cn=Boss,ou=T'], missing: 1 });
    expect(
      referenceValuesFor(
        doc,
        'manager',
        'anchor',
        (id) => links.get(id),
        () => undefined,
      ),
    ).toEqual({ values: ['a-boss'], missing: 0 });
  });
});
