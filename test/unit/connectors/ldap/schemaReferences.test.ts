import { dnSyntaxAttributes, parseAttributeType } from '../../../../lib/connectors/ldap/schemaReferences';

/** Reference attributes from a directory's subschema: DN syntax, directly or through SUP, written by users. */
describe('reference attributes from the schema', () => {
  // As OpenLDAP's core, cosine and inetorgperson schemas publish them.
  const OPENLDAP = [
    "( 2.5.4.49 NAME 'distinguishedName' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )",
    "( 2.5.4.31 NAME 'member' DESC 'RFC2256: member of a group' SUP distinguishedName )",
    "( 2.5.4.50 NAME 'uniqueMember' EQUALITY uniqueMemberMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.34 )",
    "( 2.5.4.34 NAME 'seeAlso' DESC 'RFC4519: DN of related object' SUP distinguishedName )",
    "( 0.9.2342.19200300.100.1.10 NAME 'manager' DESC 'RFC1274: DN of manager' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )",
    "( 0.9.2342.19200300.100.1.21 NAME 'secretary' SUP distinguishedName )",
    "( 2.5.4.3 NAME ( 'cn' 'commonName' ) SUP name )",
    "( 2.5.4.41 NAME 'name' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{32768} )",
    "( 2.5.18.3 NAME 'creatorsName' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE NO-USER-MODIFICATION USAGE directoryOperation )",
    "( 1.2.840.113556.1.2.102 NAME 'memberOf' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 USAGE dSAOperation NO-USER-MODIFICATION )",
    "( 1.3.6.1.1.20 NAME 'entryDN' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE NO-USER-MODIFICATION USAGE directoryOperation )",
  ];
  // As Active Directory publishes them (the SYNTAX OID quoted).
  const AD = [
    "( 1.2.840.113556.1.2.102 NAME 'memberOf' SYNTAX '1.3.6.1.4.1.1466.115.121.1.12' NO-USER-MODIFICATION )",
    "( 2.5.4.31 NAME 'member' SYNTAX '1.3.6.1.4.1.1466.115.121.1.12' )",
    "( 0.9.2342.19200300.100.1.10 NAME 'manager' SYNTAX '1.3.6.1.4.1.1466.115.121.1.12' SINGLE-VALUE )",
    "( 1.2.840.113556.1.2.436 NAME 'directReports' SYNTAX '1.3.6.1.4.1.1466.115.121.1.12' NO-USER-MODIFICATION )",
    "( 1.2.840.113556.1.4.653 NAME 'managedBy' SYNTAX '1.3.6.1.4.1.1466.115.121.1.12' SINGLE-VALUE )",
    "( 1.2.840.113556.1.4.782 NAME 'objectCategory' SYNTAX '1.3.6.1.4.1.1466.115.121.1.12' SINGLE-VALUE )",
    "( 1.2.840.113556.1.2.444 NAME 'msExchAssistantName' SYNTAX '1.3.6.1.4.1.1466.115.121.1.15' SINGLE-VALUE )",
    "( 1.2.840.113556.1.4.1793 NAME 'msDS-NonMembers' SYNTAX '1.3.6.1.4.1.1466.115.121.1.12' )",
  ];

  test('OpenLDAP: DN syntax directly or through SUP; operational and back-link attributes left out', () => {
    expect([...dnSyntaxAttributes(OPENLDAP)].sort()).toEqual(['manager', 'member', 'secretary', 'seealso']);
  });

  test('Active Directory: quoted SYNTAX; memberOf, directReports and objectCategory left out', () => {
    expect([...dnSyntaxAttributes(AD)].sort()).toEqual(['managedby', 'manager', 'member', 'msds-nonmembers']);
  });

  test('a type with several names is known by each; a SUP cycle does not loop', () => {
    const t = parseAttributeType("( 1.2.3 NAME ( 'a1' 'alias1' ) SUP b1 )");
    expect(t).toMatchObject({ names: ['a1', 'alias1'], sup: 'b1', userApplications: true, noUserModification: false });
    expect(dnSyntaxAttributes(["( 1 NAME 'x' SUP y )", "( 2 NAME 'y' SUP x )"]).size).toBe(0);
    expect(parseAttributeType('( 1.2.3 )')).toBeUndefined();
  });
});
