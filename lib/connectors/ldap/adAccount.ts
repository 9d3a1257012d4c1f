import { ConnectorError, valuesOf, type AttributeValue } from '../sdk';

/**
 * Active Directory accounts written by the directory connector: the initial password (`unicodePwd`), and
 * enabling/disabling by the ACCOUNTDISABLE bit of `userAccountControl` (the `accountDisabled` pseudo-attribute).
 * Pure functions, unit-tested on their own; ldapConnector.ts applies them in its add and update.
 */

/** The attribute AD takes a password in (write-only: never readable, never imported). */
export const PASSWORD_ATTRIBUTE = 'unicodePwd';
/**
 * A pseudo-attribute of export changes (never read from or written to the directory as such): `true` sets bit 2
 * (ACCOUNTDISABLE, 0x2) of the account's current `userAccountControl`, `false` clears it, every other flag kept.
 */
export const DISABLED_ATTRIBUTE = 'accountDisabled';
export const ACCOUNTDISABLE = 0x2;
/** NORMAL_ACCOUNT: what a new user account has when no flow gives userAccountControl. */
export const NORMAL_ACCOUNT = 0x200;

/** A password as AD wants it in unicodePwd: the password in double quotes, encoded UTF-16LE. */
export function encodeUnicodePwd(password: string): Buffer {
  return Buffer.from(`"${password}"`, 'utf16le');
}

/** `userAccountControl` with ACCOUNTDISABLE set (disabled) or cleared, every other flag kept. */
export function withDisabled(userAccountControl: number, disabled: boolean): number {
  return disabled ? (userAccountControl | ACCOUNTDISABLE) >>> 0 : (userAccountControl & ~ACCOUNTDISABLE) >>> 0;
}

/** The outbound attributes of an AD account split into the password, the disable flag and the rest. */
export interface AccountParts {
  /** The password to write (plain; encoded only for the write, never kept). */
  password?: string;
  disabled?: boolean;
  rest: Record<string, AttributeValue>;
}

const sameName = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export function accountParts(attributes: Record<string, AttributeValue>): AccountParts {
  const out: AccountParts = { rest: {} };
  for (const [name, v] of Object.entries(attributes)) {
    if (sameName(name, PASSWORD_ATTRIBUTE)) {
      const vals = valuesOf(v);
      if (!vals.length) continue;
      if (vals.length !== 1 || typeof vals[0] !== 'string' || vals[0] === '') {
        throw new ConnectorError('object_error', `${PASSWORD_ATTRIBUTE} must be one non-empty string (the password); nothing was written for this object.`);
      }
      out.password = vals[0];
      continue;
    }
    if (sameName(name, DISABLED_ATTRIBUTE)) {
      const vals = valuesOf(v);
      if (!vals.length) continue;
      const x = vals.length === 1 ? vals[0] : undefined;
      if (x === true || (typeof x === 'string' && /^(true|1|yes)$/i.test(x)) || x === 1) out.disabled = true;
      else if (x === false || (typeof x === 'string' && /^(false|0|no)$/i.test(x)) || x === 0) out.disabled = false;
      else throw new ConnectorError('object_error', `${DISABLED_ATTRIBUTE} must be true or false.`);
      continue;
    }
    out.rest[name] = v;
  }
  return out;
}

/** The current userAccountControl of an entry's values (undefined when absent or not a number). */
export function userAccountControlOf(value: unknown): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v === null || v === '') return undefined;
  const n = Number(Buffer.isBuffer(v) ? v.toString('utf8') : v);
  return Number.isInteger(n) ? n >>> 0 : undefined;
}
