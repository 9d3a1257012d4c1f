import { staffAcceptsMail, type HrRow } from './model';

/**
 * The soak test's oracle: what the directory and the staff table must hold after a day's cycle, computed from
 * that day's HR rows alone (never from what the service says or did), and the comparison of that with what
 * slapd and PostgreSQL hold. Pure: the harness reads the servers and hands the results in.
 *
 * The expectations follow docs/tutorial.md's rules: an entry `uid=<id>,ou=<department>,ou=people,dc=example,dc=com`
 * with uid, employeeNumber, givenName, sn, cn (`givenName + ' ' + sn`), mail, departmentNumber, title, and
 * `manager` = the manager's DN when the manager is in the HR file (a reference to someone not hired yet, or
 * gone, is no value); a staff row with the same values and `manager_id` = the manager's employee id when the
 * manager's row is in the table. The staff table refuses a mail without `@` (the soak's CHECK): such a row
 * is expected absent, and its refusal expected reported by the export.
 *
 * DNs are compared as LDAP compares them, never as strings: `\,` and `\2C` are the same character, attribute
 * types and (for the caseIgnore attributes uid, ou, dc) values compare without case, spaces around the
 * separators do not count. A difference the oracle reports must be one the directory would agree with.
 */

export const PEOPLE_DN = 'ou=people,dc=example,dc=com';

/** RFC 4514 escaping of an attribute value (for the expected DN's display form; comparisons parse). */
export function escapeDnValue(value: string): string {
  let out = value.replace(/[\\,+"<>;=]/g, (c) => `\\${c}`);
  if (/^[ #]/.test(out)) out = `\\${out}`;
  if (/ $/.test(out)) out = `${out.slice(0, -1)}\\ `;
  return out;
}

export const expectedDn = (row: Pick<HrRow, 'employeeId' | 'department'>): string =>
  `uid=${escapeDnValue(row.employeeId)},ou=${escapeDnValue(row.department)},${PEOPLE_DN}`;

/** One attribute type and value of an RDN. */
export type Ava = [type: string, value: string];

/**
 * The RDNs of a DN string (RFC 4514, with RFC 2253's quoted values): each RDN a list of attribute types and
 * unescaped values. `\X` is the character X, `\HH` a byte (a run of them is decoded as UTF-8). Throws on a
 * malformed DN (a harness bug or a malformed value in the directory: both worth seeing).
 */
export function parseDn(dn: string): Ava[][] {
  const rdns: Ava[][] = [];
  let i = 0;
  const s = dn.trim();
  if (!s) return rdns;
  let rdn: Ava[] = [];
  for (;;) {
    while (s[i] === ' ') i++;
    const eq = s.indexOf('=', i);
    if (eq < 0) throw new Error(`Malformed DN (no '=' after position ${i}): ${dn}`);
    const type = s.slice(i, eq).trim();
    i = eq + 1;
    while (s[i] === ' ') i++;
    const bytes: number[] = [];
    const flushText = (text: string) => bytes.push(...Buffer.from(text, 'utf8'));
    let trailingSpaces = 0;
    if (s[i] === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\') i++;
        flushText(s[i]);
        i++;
      }
      i++;
      while (s[i] === ' ') i++;
    } else {
      while (i < s.length && s[i] !== ',' && s[i] !== '+' && s[i] !== ';') {
        if (s[i] === '\\') {
          const hex = /^[0-9a-fA-F]{2}/.exec(s.slice(i + 1, i + 3));
          if (hex) {
            bytes.push(parseInt(hex[0], 16));
            i += 3;
          } else {
            flushText(s[i + 1]);
            i += 2;
          }
          trailingSpaces = 0;
          continue;
        }
        const cp = s.codePointAt(i)!;
        const ch = String.fromCodePoint(cp);
        flushText(ch);
        trailingSpaces = ch === ' ' ? trailingSpaces + 1 : 0;
        i += ch.length;
      }
      // Unescaped spaces before a separator are not part of the value.
      if (trailingSpaces) bytes.splice(bytes.length - trailingSpaces, trailingSpaces);
    }
    rdn.push([type, Buffer.from(bytes).toString('utf8')]);
    if (i >= s.length) {
      rdns.push(rdn);
      return rdns;
    }
    const sep = s[i++];
    if (sep !== '+') {
      rdns.push(rdn);
      rdn = [];
    }
  }
}

/** A value as a caseIgnore matching rule sees it: Unicode-normalized, case folded, inner spaces collapsed. */
const foldValue = (v: string) => v.normalize('NFKC').toLowerCase().trim().replace(/\s+/g, ' ');

/**
 * A DN's comparison key: equal keys for DNs LDAP holds equal. Types without case (an OID form is left as
 * it is); values folded (the DN's attributes here, uid, ou and dc, all match without case); the AVAs of a
 * multi-valued RDN in order of type.
 */
export function dnKey(dn: string): string {
  return JSON.stringify(
    parseDn(dn).map((rdn) =>
      rdn
        .map(([t, v]) => [t.toLowerCase(), foldValue(v)])
        .sort((a, b) => (a[0] + '=' + a[1] < b[0] + '=' + b[1] ? -1 : 1))
        .map(([t, v]) => `${t}=${v}`),
    ),
  );
}

export function dnEqual(a: string, b: string): boolean {
  return dnKey(a) === dnKey(b);
}

/** The attributes of a person entry the oracle checks, as the tutorial's outbound rules write them. */
export const LDAP_ATTRIBUTES = ['uid', 'employeeNumber', 'givenName', 'sn', 'cn', 'mail', 'departmentNumber', 'title', 'manager'] as const;
export const STAFF_COLUMNS = ['given_name', 'surname', 'mail', 'department', 'manager_id'] as const;

export interface ExpectedEntry {
  employeeId: string;
  dn: string;
  /** By attribute (LDAP_ATTRIBUTES), the values; an empty list: the attribute must be absent. */
  attributes: Record<string, string[]>;
}

export interface StaffRow {
  employee_id: string;
  given_name: string | null;
  surname: string | null;
  mail: string | null;
  department: string | null;
  manager_id: string | null;
}

export interface Expected {
  ldap: Map<string, ExpectedEntry>;
  staff: Map<string, StaffRow>;
  /** Employee ids whose add the staff table must refuse today (the export must report each). */
  staffRefused: string[];
}

/** What both targets must hold for these HR rows. */
export function expectedState(rows: readonly HrRow[]): Expected {
  const byId = new Map(rows.map((r) => [r.employeeId, r]));
  if (byId.size !== rows.length) throw new Error('The HR rows hold an employee id twice (a model bug).');
  const ldap = new Map<string, ExpectedEntry>();
  for (const r of rows) {
    const manager = r.manager ? byId.get(r.manager) : undefined;
    ldap.set(r.employeeId, {
      employeeId: r.employeeId,
      dn: expectedDn(r),
      attributes: {
        uid: [r.employeeId],
        employeeNumber: [r.employeeId],
        givenName: [r.givenName],
        sn: [r.sn],
        cn: [`${r.givenName} ${r.sn}`],
        mail: [r.mail],
        departmentNumber: [r.department],
        title: [r.title],
        manager: manager ? [expectedDn(manager)] : [],
      },
    });
  }
  const accepted = new Set(rows.filter((r) => staffAcceptsMail(r.mail)).map((r) => r.employeeId));
  const staff = new Map<string, StaffRow>();
  for (const r of rows) {
    if (!accepted.has(r.employeeId)) continue;
    staff.set(r.employeeId, {
      employee_id: r.employeeId,
      given_name: r.givenName,
      surname: r.sn,
      mail: r.mail,
      department: r.department,
      manager_id: r.manager && accepted.has(r.manager) ? r.manager : null,
    });
  }
  return { ldap, staff, staffRefused: rows.filter((r) => !accepted.has(r.employeeId)).map((r) => r.employeeId) };
}

/** A person entry as read from the directory: its DN and its attributes by lower-case type. */
export interface ActualEntry {
  dn: string;
  attributes: Record<string, string[]>;
}

/** `refusal-unreported`: an add the staff table must refuse, and no staff export of the day reported an error. */
export type DifferenceKind = 'missing' | 'extra' | 'duplicate' | 'wrong-dn' | 'wrong-value' | 'refusal-unreported';

export interface Difference {
  target: 'ldap' | 'staff';
  kind: DifferenceKind;
  employeeId: string;
  attribute?: string;
  expected?: unknown;
  actual?: unknown;
}

/** The category a difference is counted under: `ldap:wrong-value:manager`, `staff:missing`... */
export const categoryOf = (d: Difference): string => [d.target, d.kind, d.attribute].filter(Boolean).join(':');

const first = (a: Record<string, string[]>, type: string): string | undefined => a[type.toLowerCase()]?.[0];

/** The employee id an entry is for: its employeeNumber, else its uid, else its RDN's uid. */
function entryId(e: ActualEntry): string {
  const fromRdn = (() => {
    try {
      return parseDn(e.dn)[0]?.find(([t]) => t.toLowerCase() === 'uid')?.[1];
    } catch {
      return undefined;
    }
  })();
  return first(e.attributes, 'employeeNumber') ?? first(e.attributes, 'uid') ?? fromRdn ?? '';
}

const sorted = (v: readonly string[]) => [...v].sort();
const sameList = (a: readonly string[], b: readonly string[]) => JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));

/** Every difference between the expected entries and the directory's person entries. */
export function compareLdap(expected: Map<string, ExpectedEntry>, actual: readonly ActualEntry[]): Difference[] {
  const out: Difference[] = [];
  const byId = new Map<string, ActualEntry[]>();
  for (const e of actual) {
    const id = entryId(e);
    byId.set(id, [...(byId.get(id) ?? []), e]);
  }
  for (const [id, entries] of byId) {
    const exp = expected.get(id);
    if (!exp) {
      for (const e of entries) out.push({ target: 'ldap', kind: 'extra', employeeId: id, actual: e.dn });
      continue;
    }
    if (entries.length > 1) out.push({ target: 'ldap', kind: 'duplicate', employeeId: id, expected: exp.dn, actual: entries.map((e) => e.dn) });
    const e = entries.find((x) => dnEqual(x.dn, exp.dn)) ?? entries[0];
    if (!dnEqual(e.dn, exp.dn)) out.push({ target: 'ldap', kind: 'wrong-dn', employeeId: id, expected: exp.dn, actual: e.dn });
    for (const attr of LDAP_ATTRIBUTES) {
      const want = exp.attributes[attr];
      const got = e.attributes[attr.toLowerCase()] ?? [];
      const same = attr === 'manager' ? sameList(want.map(dnKey), got.map(safeDnKey)) : sameList(want, got);
      if (!same) out.push({ target: 'ldap', kind: 'wrong-value', employeeId: id, attribute: attr, expected: want, actual: got });
    }
  }
  for (const [id, exp] of expected) if (!byId.has(id)) out.push({ target: 'ldap', kind: 'missing', employeeId: id, expected: exp.dn });
  return out;
}

/** A value of a DN attribute that does not parse is compared as itself (and so differs from any DN). */
function safeDnKey(v: string): string {
  try {
    return dnKey(v);
  } catch {
    return `unparsable:${v}`;
  }
}

/** Every difference between the expected staff rows and the table's rows. */
export function compareStaff(expected: Map<string, StaffRow>, actual: readonly StaffRow[]): Difference[] {
  const out: Difference[] = [];
  const seen = new Set<string>();
  for (const row of actual) {
    const id = row.employee_id;
    seen.add(id);
    const exp = expected.get(id);
    if (!exp) {
      out.push({ target: 'staff', kind: 'extra', employeeId: id, actual: row });
      continue;
    }
    for (const c of STAFF_COLUMNS)
      if ((row[c] ?? null) !== exp[c])
        out.push({ target: 'staff', kind: 'wrong-value', employeeId: id, attribute: c, expected: exp[c], actual: row[c] ?? null });
  }
  for (const [id, exp] of expected) if (!seen.has(id)) out.push({ target: 'staff', kind: 'missing', employeeId: id, expected: exp });
  return out;
}
