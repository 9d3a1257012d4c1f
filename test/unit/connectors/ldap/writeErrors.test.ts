import {
  AlreadyExistsError,
  ConstraintViolationError,
  InsufficientAccessError,
  NotAllowedOnNonLeafError,
  NoSuchObjectError,
  ObjectClassViolationError,
  UnwillingToPerformError,
  type ResultCodeError,
} from 'ldapts';
import { attributeNamedBy, diagnosticOf, writeRefusal, type WriteOperation } from '../../../../lib/connectors/ldap/writeErrors';

/**
 * The readable per-object errors of directory writes, from the errors ldapts itself builds out of a server's
 * answer (result code + diagnostic text). The slapd-backed test (test/integration/ldap/exportErrors.test.ts)
 * covers what slapd answers; these cover what it does not produce on its own (Active Directory's diagnostics,
 * unwillingToPerform, notAllowedOnNonLeaf, constraint violations by password policy).
 */
const RAW = /0x[0-9a-f]+|LDAP result|Code:/i;
const DN = 'CN=Ada Lovelace,OU=Engineering,DC=corp,DC=test';

function refuse(err: ResultCodeError, op: WriteOperation, secrets: string[] = []) {
  const e = writeRefusal(err.code, err.message, op, secrets);
  if (!e) throw new Error(`no refusal for ${err.code}`);
  return e;
}

describe('directory write refusals', () => {
  test('entryAlreadyExists on add: already_exists, the DN and nothing else', () => {
    const e = refuse(new AlreadyExistsError(''), { kind: 'add', dn: DN });
    expect(e.code).toBe('already_exists');
    expect(e.message).toBe(`An entry with the DN '${DN}' already exists.`);
    expect(e.retriable).toBe(false);
    expect(e.toObjectError('User')).toMatchObject({ code: 'already_exists', location: DN, objectType: 'User' });
  });

  test("Active Directory's entryAlreadyExists (with its diagnostic) reads the same", () => {
    const e = refuse(new AlreadyExistsError('00000524: UpdErr: DSID-031A11E2, problem 6005 (ENTRY_EXISTS), data 0\n'), { kind: 'add', dn: DN });
    expect(e.message).toBe(`An entry with the DN '${DN}' already exists.`);
  });

  test("Samba AD's refusal of a taken sAMAccountName keeps the directory's words (which value is taken)", () => {
    const e = refuse(new AlreadyExistsError("samldb: Account name (sAMAccountName) 'asmith' already in use!"), { kind: 'add', dn: DN });
    expect(e.code).toBe('already_exists');
    expect(e.message).toBe(`An entry with the DN '${DN}' already exists; the directory says: samldb: Account name (sAMAccountName) 'asmith' already in use.`);
  });

  test('noSuchObject on modify and delete names the entry; on a move the new parent', () => {
    expect(refuse(new NoSuchObjectError(''), { kind: 'modify', dn: DN }).message).toBe(`Modifying '${DN}': the entry does not exist.`);
    expect(refuse(new NoSuchObjectError(''), { kind: 'delete', dn: DN }).code).toBe('not_found');
    const moved = refuse(new NoSuchObjectError(''), { kind: 'move', dn: DN, newDn: 'CN=Ada Lovelace,OU=Gone,DC=corp,DC=test' });
    expect(moved.message).toBe(
      `Moving '${DN}' to 'CN=Ada Lovelace,OU=Gone,DC=corp,DC=test': the entry or its new parent 'OU=Gone,DC=corp,DC=test' does not exist.`,
    );
  });

  test("AD's constraint diagnostic gives the attribute", () => {
    const diag = '0000202F: AtrErr: DSID-03152A28, #1:\n\t0: 0000202F: DSID-03152A28, problem 1005 (CONSTRAINT_ATT_TYPE), data 0, Att 9005a (mail)\n';
    const e = refuse(new ConstraintViolationError(diag), { kind: 'modify', dn: DN });
    expect(e.code).toBe('constraint_violation');
    expect(e.message).toMatch(new RegExp(`^Modifying '${DN}': a constraint of the directory is violated \\(attribute mail\\); the directory says: 0000202F`));
    expect(e.message).not.toMatch(/\n|\t/);
  });

  test('unwillingToPerform, notAllowedOnNonLeaf, objectClassViolation, insufficientAccessRights read as sentences', () => {
    const unwilling = refuse(new UnwillingToPerformError('0000001F: SvcErr: DSID-031A12D2, problem 5003 (WILL_NOT_PERFORM), data 0'), {
      kind: 'modify',
      dn: DN,
    });
    expect(unwilling).toMatchObject({ code: 'constraint_violation' });
    expect(unwilling.message).toMatch(/^Modifying '.*': the directory is unwilling to perform it; the directory says: /);
    const nonLeaf = refuse(new NotAllowedOnNonLeafError('subordinate objects must be deleted first'), { kind: 'delete', dn: DN });
    expect(nonLeaf.message).toBe(`Deleting '${DN}': the entry has entries below it; the directory says: subordinate objects must be deleted first.`);
    const oc = refuse(new ObjectClassViolationError("object class 'inetOrgPerson' requires attribute 'sn'"), { kind: 'add', dn: DN });
    expect(oc.message).toBe(
      `Adding '${DN}': the object class rules are violated (attribute sn); the directory says: object class 'inetOrgPerson' requires attribute 'sn'.`,
    );
    const rights = refuse(new InsufficientAccessError('no write access to parent'), { kind: 'add', dn: DN, bindDN: 'CN=svc-sync,DC=corp,DC=test' });
    expect(rights).toMatchObject({ code: 'object_error' });
    expect(rights.message).toBe(
      `Adding '${DN}': the account 'CN=svc-sync,DC=corp,DC=test' has insufficient access rights; the directory says: no write access to parent.`,
    );
    for (const e of [unwilling, nonLeaf, oc, rights]) expect(e.message).not.toMatch(RAW);
  });

  test('a secret the server quotes is redacted', () => {
    const e = refuse(new ConstraintViolationError("password 'Winter2024!' fails quality checking policy"), { kind: 'modify', dn: DN }, ['Winter2024!']);
    expect(e.message).not.toContain('Winter2024!');
    expect(e.message).toContain('********');
  });

  test('run-level codes are not per-object refusals', () => {
    for (const code of [3, 13, 49, 51, 52]) expect(writeRefusal(code, '', { kind: 'add', dn: DN }, [])).toBeUndefined();
  });

  test('diagnostics and attribute names', () => {
    expect(diagnosticOf(' Code: 0x44', [])).toBeUndefined();
    expect(diagnosticOf('manager: value #0 invalid per syntax Code: 0x15', [])).toBe('manager: value #0 invalid per syntax');
    expect(attributeNamedBy('manager: value #0 invalid per syntax')).toBe('manager');
    expect(attributeNamedBy('favouriteColour: attribute type undefined')).toBe('favouriteColour');
    expect(attributeNamedBy('no write access to parent')).toBeUndefined();
    expect(diagnosticOf('x'.repeat(500), [])!.length).toBeLessThanOrEqual(200);
  });
});
