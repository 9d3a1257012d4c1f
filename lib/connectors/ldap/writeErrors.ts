import { ConnectorError, redactSecrets, type ConnectorErrorCode } from '../sdk';
import { parentDn } from './values';

/**
 * What an operator reads when the directory refuses a write (an export's add, modify, delete or move): the
 * SDK's error code and a sentence naming the DN, and the attribute when the server names one, never the
 * protocol's numbers ("Code: 0x44", "LDAP result 68"). Only LDAP result codes that concern one object land
 * here; transport failures and run-level codes (invalid credentials, busy, time limit) are left to the caller.
 */

/** One write operation, as the session performed it. */
export interface WriteOperation {
  kind: 'add' | 'modify' | 'delete' | 'move';
  dn: string;
  /** The DN a move goes to. */
  newDn?: string;
  /** The account the session is bound as (named when it lacks rights). */
  bindDN?: string;
}

interface Refusal {
  code: ConnectorErrorCode;
  /** Why, as a phrase after "Adding 'dn': ". */
  reason: string;
  /** Show the server's own diagnostic text after the reason (off where it adds nothing). */
  diagnostic?: boolean;
}

/** LDAP result codes that concern one object, by number (RFC 4511 section 4.1.9). */
const REFUSALS: Record<number, (op: WriteOperation) => Refusal> = {
  16: () => ({ code: 'constraint_violation', reason: 'a value to remove is not on the entry (no such attribute)', diagnostic: true }),
  17: () => ({ code: 'constraint_violation', reason: "the directory's schema does not define the attribute", diagnostic: true }),
  18: () => ({ code: 'constraint_violation', reason: 'the attribute has no matching rule for this operation', diagnostic: true }),
  19: () => ({ code: 'constraint_violation', reason: 'a constraint of the directory is violated', diagnostic: true }),
  20: () => ({ code: 'constraint_violation', reason: 'the value is already on the entry', diagnostic: true }),
  21: () => ({ code: 'constraint_violation', reason: "a value does not have the attribute's syntax", diagnostic: true }),
  32: (op) => ({
    code: 'not_found',
    reason:
      op.kind === 'add'
        ? `its parent '${parentDn(op.dn)}' does not exist`
        : op.kind === 'move'
          ? `the entry or its new parent '${parentDn(op.newDn ?? '')}' does not exist`
          : 'the entry does not exist',
  }),
  34: () => ({ code: 'object_error', reason: 'the DN is not a valid DN', diagnostic: true }),
  36: () => ({ code: 'object_error', reason: 'the DN names an alias the directory cannot follow', diagnostic: true }),
  50: (op) => ({ code: 'object_error', reason: `the account ${op.bindDN ? `'${op.bindDN}' ` : ''}has insufficient access rights`, diagnostic: true }),
  53: () => ({ code: 'constraint_violation', reason: 'the directory is unwilling to perform it', diagnostic: true }),
  54: () => ({ code: 'object_error', reason: 'the directory found a loop while processing it', diagnostic: true }),
  64: () => ({ code: 'constraint_violation', reason: "the DN breaks the directory's naming rules", diagnostic: true }),
  65: () => ({ code: 'constraint_violation', reason: 'the object class rules are violated', diagnostic: true }),
  66: () => ({ code: 'constraint_violation', reason: 'the entry has entries below it', diagnostic: true }),
  67: () => ({ code: 'constraint_violation', reason: 'it would remove the value the entry is named by (its RDN)', diagnostic: true }),
  68: (op) => ({ code: 'already_exists', reason: `an entry with the DN '${op.kind === 'move' ? op.newDn : op.dn}' already exists` }),
  69: () => ({ code: 'constraint_violation', reason: "the entry's structural object class cannot be changed", diagnostic: true }),
  71: () => ({ code: 'object_error', reason: 'it would affect more than one directory server', diagnostic: true }),
  80: () => ({ code: 'object_error', reason: 'the directory failed with an unexpected error', diagnostic: true }),
};

/** The operation as the sentence's subject: "Adding 'dn'". */
function doing(op: WriteOperation): string {
  switch (op.kind) {
    case 'add':
      return `Adding '${op.dn}'`;
    case 'modify':
      return `Modifying '${op.dn}'`;
    case 'delete':
      return `Deleting '${op.dn}'`;
    default:
      return `Moving '${op.dn}' to '${op.newDn}'`;
  }
}

/**
 * The server's diagnostic text without ldapts's " Code: 0x.." suffix, on one line, bounded; undefined when empty.
 * Secrets (the bind password, password values being written) are redacted should a server echo them.
 */
export function diagnosticOf(message: string, secrets: ReadonlyArray<string | undefined>): string | undefined {
  const text = redactSecrets(message, secrets)
    .replace(/\s*Code: 0x[0-9a-f]+\s*$/i, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.\s]+$/, '');
  if (!text) return undefined;
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

/** The attribute a server's diagnostic names (slapd: "sn: value #0 ...", "requires attribute 'sn'"; AD: "Att 9005a (mail)"). */
export function attributeNamedBy(diagnostic: string | undefined): string | undefined {
  if (!diagnostic) return undefined;
  const patterns = [/attribute(?: type)? '([A-Za-z][\w;-]*)'/, /^([A-Za-z][\w;-]*): /, /\bAtt [0-9a-f]+ \(([A-Za-z][\w;-]*)\)/];
  for (const p of patterns) {
    const m = p.exec(diagnostic);
    if (m) return m[1];
  }
  return undefined;
}

/**
 * The per-object error for an LDAP result code of a write; undefined when the code is not one of them (the
 * caller maps it as a run-level failure).
 */
export function writeRefusal(
  resultCode: number,
  serverMessage: string,
  op: WriteOperation,
  secrets: ReadonlyArray<string | undefined>,
): ConnectorError | undefined {
  const refusal = REFUSALS[resultCode]?.(op);
  if (!refusal) return undefined;
  const diagnostic = refusal.diagnostic ? diagnosticOf(serverMessage, secrets) : undefined;
  const attribute = attributeNamedBy(diagnostic);
  let message: string;
  if (refusal.code === 'already_exists' && op.kind === 'add') {
    // Samba AD refuses an add whose sAMAccountName or userPrincipalName is taken elsewhere with the same code: its
    // own words say which value (the engine's unique values move to their next candidate on it). Windows AD's
    // generic ENTRY_EXISTS diagnostic says nothing more than the sentence.
    const diagnostic = diagnosticOf(serverMessage, secrets);
    const said = diagnostic && !/\(ENTRY_EXISTS\)/.test(diagnostic) ? diagnostic.replace(/[!.]+$/, '') : undefined;
    message = `An entry with the DN '${op.dn}' already exists${said ? `; the directory says: ${said}` : ''}.`;
  } else {
    message = `${doing(op)}: ${refusal.reason}`;
    if (attribute) message += ` (attribute ${attribute})`;
    if (diagnostic) message += `; the directory says: ${diagnostic}`;
    message += '.';
  }
  return new ConnectorError(refusal.code, message, { retriable: false, location: op.dn });
}
