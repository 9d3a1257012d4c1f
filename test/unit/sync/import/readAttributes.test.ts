import type { Rule } from '../../../../lib/storage/rules';
import { ALL_ATTRIBUTES, importReads, newlyRead, newlyReadNote, ruleAttributes } from '../../../../lib/sync/import/readAttributes';

let n = 0;
const rule = (r: Partial<Rule> & Pick<Rule, 'ruleType'>): Rule => ({
  ruleId: `r${++n}`,
  ruleName: `rule ${n}`,
  connectorId: 'ad',
  priority: 10,
  isEnabled: true,
  sourceAttribute: null,
  targetAttribute: null,
  confidence: null,
  transformScript: null,
  createdOn: '2026-01-01T00:00:00.000Z',
  updatedOn: '2026-01-01T00:00:00.000Z',
  ...r,
});

describe("the attributes a directory connector's rules use", () => {
  const rules = [
    rule({ ruleType: 'ProjectionRule', sourceAttribute: 'sAMAccountName', objectType: 'User' }),
    rule({ ruleType: 'JoinRule', sourceAttribute: 'employeeID', targetAttribute: 'employeeId' }),
    rule({
      ruleType: 'FlowRule',
      direction: 'inbound',
      sourceAttribute: 'mail',
      targetAttribute: 'email',
      transformScript: 'lower(source) + (object.proxyAddresses ?? "")',
    }),
    rule({ ruleType: 'FlowRule', sourceAttribute: 'givenName', targetAttribute: 'firstName' }),
    rule({ ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'department', targetAttribute: 'department', transformScript: 'object.costCenter' }),
    rule({ ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'password', targetAttribute: 'unicodePwd' }),
    rule({ ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'x', targetAttribute: 'dn' }),
    rule({ ruleType: 'FlowRule', direction: 'outbound', sourceAttribute: 'leaver', targetAttribute: 'accountDisabled' }),
    rule({ ruleType: 'MeshComposerRule', relationshipType: 'boss', sourceAttribute: 'manager' }),
    rule({ ruleType: 'MeshComposerRule', connectorId: null, targetAttribute: 'displayName', transformScript: 'object.firstName' }),
    rule({ ruleType: 'FlowRule', sourceAttribute: 'title', targetAttribute: 'title', isEnabled: false }),
    rule({ ruleType: 'FlowRule', connectorId: 'hr', sourceAttribute: 'costCenter', targetAttribute: 'costCenter' }),
  ];

  test("joins, projections, inbound flows (and what their scripts read of object), outbound targets, reference renames; not the mesh side's", () => {
    // An outbound script reads mesh attributes; dn, container and AD's accountDisabled are not read; disabled rules and other connectors' count not.
    expect(ruleAttributes('ad', 'active_directory', {}, rules)).toEqual([
      'department',
      'employeeID',
      'givenName',
      'mail',
      'manager',
      'proxyAddresses',
      'sAMAccountName',
      'unicodePwd',
    ]);
  });
  test('deprovisioning by disable: the attributes it writes (their values are kept for a re-enable)', () => {
    const config = { deprovisioning: { action: 'disable', disableAttributes: { employeeStatus: 'disabled', accountDisabled: true } } };
    expect(ruleAttributes('ad', 'active_directory', config, rules.slice(0, 1))).toEqual(['employeeStatus', 'sAMAccountName']);
    expect(
      ruleAttributes('ad', 'active_directory', { deprovisioning: { action: 'delete', disableAttributes: { employeeStatus: 'x' } } }, rules.slice(0, 1)),
    ).toEqual(['sAMAccountName']);
  });
  test('everything: no rule of the connector, or a script that reads object by a computed name', () => {
    expect(ruleAttributes('ad', 'ldap', {}, [])).toBe(ALL_ATTRIBUTES);
    expect(ruleAttributes('other', 'ldap', {}, rules)).toBe(ALL_ATTRIBUTES);
    expect(
      ruleAttributes('ad', 'ldap', {}, [
        ...rules,
        rule({ ruleType: 'FlowRule', sourceAttribute: 'sn', targetAttribute: 'x', transformScript: 'object[source]' }),
      ]),
    ).toBe(ALL_ATTRIBUTES);
  });
  test("what an import reads: a directory's configured attributes win (`*` among them: everything); other connector types are not limited", () => {
    expect(importReads('ad', 'active_directory', { attributes: ['cn', 'sn'] }, rules)).toEqual(['cn', 'sn']);
    expect(importReads('ad', 'active_directory', { attributes: ['*'] }, rules)).toBe(ALL_ATTRIBUTES);
    expect(importReads('ad', 'ldap', {}, rules.slice(0, 1))).toBe(ALL_ATTRIBUTES);
    expect(importReads('ad', 'ldap', { attributesFromRules: true }, rules.slice(0, 1))).toEqual(['sAMAccountName']);
    expect(importReads('ad', 'ldap', { attributesFromRules: true, attributes: ['cn'] }, rules.slice(0, 1))).toEqual(['cn']);
    expect(importReads('ad', 'sql', {}, rules)).toBeNull();
  });
  test('what a full import must read that the last one did not', () => {
    expect(newlyRead(['mail', 'Title'], ['MAIL', 'sn'])).toEqual(['title']);
    expect(newlyRead(['mail'], ['mail', 'sn'])).toEqual([]);
    expect(newlyRead(ALL_ATTRIBUTES, ['mail'])).toEqual([ALL_ATTRIBUTES]);
    // Nothing recorded (before this was recorded, everything was read) or everything read: nothing is missing.
    expect(newlyRead(['title'], null)).toEqual([]);
    expect(newlyRead(['title'], ALL_ATTRIBUTES)).toEqual([]);
    expect(newlyReadNote(['title'])).toMatch(/did not read \(title\).*full import/);
  });
});
