import { canonicalizeRule, directorySideFields } from '../../../lib/api/ruleAttributes';
import { canonicalAttributeNames } from '../../../lib/connectors/ldap/schemaReferences';
import type { RuleRequest } from '../../../lib/schemas/rules';

/** Attribute names of a directory connector's rules, against schema lines as AD and OpenLDAP publish them. */
const AD = [
  "( 1.2.840.113556.1.4.2 NAME 'objectGUID' SYNTAX '1.3.6.1.4.1.1466.115.121.1.40' SINGLE-VALUE NO-USER-MODIFICATION )",
  "( 1.2.840.113556.1.4.1 NAME 'employeeID' SYNTAX '1.3.6.1.4.1.1466.115.121.1.15' SINGLE-VALUE )",
  "( 2.5.4.3 NAME 'cn' SYNTAX '1.3.6.1.4.1.1466.115.121.1.15' SINGLE-VALUE )",
];
const OPENLDAP = [
  "( 2.5.4.3 NAME ( 'cn' 'commonName' ) DESC 'RFC4519: common name(s) for which the entity is known by' SUP name )",
  "( 2.16.840.1.113730.3.1.3 NAME 'employeeNumber' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )",
];

const rule = (r: Partial<RuleRequest>): RuleRequest =>
  ({ ruleName: 'r', ruleType: 'FlowRule', connectorId: '00000000-0000-4000-8000-000000000001', ...r }) as RuleRequest;

describe('canonical attribute names from the schema', () => {
  test('every NAME, lower-cased, to the first NAME as the schema spells it', () => {
    const ad = canonicalAttributeNames(AD);
    expect(ad.get('employeeid')).toBe('employeeID');
    expect(ad.get('objectguid')).toBe('objectGUID');
    const ol = canonicalAttributeNames(OPENLDAP);
    expect(ol.get('commonname')).toBe('cn');
    expect(ol.get('employeenumber')).toBe('employeeNumber');
  });
});

describe('a directory rule is stored in the schema spelling; an unknown attribute is a 400', () => {
  const names = canonicalAttributeNames(AD);
  test('the directory side of each rule type', () => {
    expect(directorySideFields(rule({ ruleType: 'JoinRule' }))).toEqual(['sourceAttribute']);
    expect(directorySideFields(rule({ ruleType: 'ProjectionRule' }))).toEqual(['sourceAttribute']);
    expect(directorySideFields(rule({ direction: 'inbound' }))).toEqual(['sourceAttribute']);
    expect(directorySideFields(rule({ direction: 'outbound' }))).toEqual(['targetAttribute']);
    expect(directorySideFields(rule({ ruleType: 'MeshComposerRule', relationshipType: 'manager', sourceAttribute: 'manager' }))).toEqual(['sourceAttribute']);
    expect(directorySideFields(rule({ ruleType: 'MeshComposerRule', targetAttribute: 'x', transformScript: '1' }))).toEqual([]);
  });
  test('inbound employeeid reads employeeID; the mesh side is left as written', () => {
    expect(canonicalizeRule(rule({ sourceAttribute: 'employeeid', targetAttribute: 'employeeid' }), names, 'active_directory')).toMatchObject({
      sourceAttribute: 'employeeID',
      targetAttribute: 'employeeid',
    });
    expect(canonicalizeRule(rule({ direction: 'outbound', sourceAttribute: 'x', targetAttribute: 'EMPLOYEEID' }), names, 'active_directory')).toMatchObject({
      sourceAttribute: 'x',
      targetAttribute: 'employeeID',
    });
  });
  test('dn and container are the connector own attributes: accepted as written', () => {
    const r = rule({ direction: 'outbound', sourceAttribute: 'x', targetAttribute: 'container' });
    expect(canonicalizeRule(r, names, 'ldap')).toBe(r);
  });
  test('an attribute the schema does not have: 400 naming it', () => {
    expect(() => canonicalizeRule(rule({ sourceAttribute: 'employeId', targetAttribute: 'e' }), names, 'active_directory')).toThrow(
      expect.objectContaining({
        status: 400,
        extra: {
          errors: [
            {
              path: '/sourceAttribute',
              message: "'employeId' is not an attribute of the directory's schema (active_directory connector) (did you mean 'employeeID'?)",
            },
          ],
        },
      }),
    );
  });
});
