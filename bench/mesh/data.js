'use strict';
/**
 * The HR export of the mesh benchmark: a deterministic CSV (same count and seed, same file) that the file
 * connector reads. One row per person, 90 % User and 10 % Contact (`kind`), anchored by `account`
 * (`Given.Surname.000042`, a few of them non-ASCII). 22 attribute columns flow into the mesh:
 * - 20 on every row: employeeId, givenName, sn, displayName, mail, userPrincipalName, proxyAddresses
 *   (multi-valued: SMTP + alias), department (20 values), title (50), company (5), city (100), country (10),
 *   preferredLanguage, telephoneNumber, employeeType, costCenter, isActive (TRUE/FALSE/yes/No/1/0 in mixed
 *   case, 10 % 'pending' which is neither true nor false), hireDate, office, memberOf (multi-valued: one
 *   to four groups);
 * - 2 on some rows only: mobile (70 %), description (50 %), for ispresent / isnotpresent.
 */
const { closeSync, openSync, writeSync } = require('node:fs');

const FIRST = [
  'Ada',
  'Alan',
  'Grace',
  'Edsger',
  'Barbara',
  'Donald',
  'Frances',
  'John',
  'Margaret',
  'Ken',
  'Dennis',
  'Radia',
  'Tim',
  'Vint',
  'Leslie',
  'Niklaus',
  'Tony',
  'Shafi',
  'Whitfield',
  'Hedy',
  'Élodie',
  'Søren',
];
const LAST = [
  'Lovelace',
  'Turing',
  'Hopper',
  'Dijkstra',
  'Liskov',
  'Knuth',
  'Allen',
  'Backus',
  'Hamilton',
  'Thompson',
  'Ritchie',
  'Perlman',
  'Berners-Lee',
  'Cerf',
  'Lamport',
  'Wirth',
  'Hoare',
  'Goldwasser',
  'Diffie',
  'Lamarr',
];
const DEPTS = Array.from({ length: 20 }, (_, i) => `Department ${String.fromCharCode(65 + i)}`);
const TITLES = Array.from({ length: 50 }, (_, i) => `Title ${i}`);
const CITIES = Array.from({ length: 100 }, (_, i) => `City ${i}`);
const COUNTRIES = ['FR', 'DE', 'US', 'GB', 'JP', 'BR', 'IN', 'ES', 'IT', 'CA'];
const LANGUAGES = ['en-US', 'fr-FR', 'de-DE', 'en-GB', 'ja-JP', 'pt-BR', 'es-ES', 'it-IT'];
const GROUPS = Array.from({ length: 30 }, (_, i) => `grp-${i}`);
/** isActive as HR exports write it: [text, share]. */
const FLAGS = [
  ['TRUE', 0.4],
  ['FALSE', 0.1],
  ['yes', 0.15],
  ['No', 0.05],
  ['1', 0.15],
  ['0', 0.05],
  ['pending', 0.1],
];

/** The CSV columns: the anchor, the row kind (which projection rule applies), then the attributes. */
const ATTRIBUTES = [
  'employeeId',
  'givenName',
  'sn',
  'displayName',
  'mail',
  'userPrincipalName',
  'proxyAddresses',
  'department',
  'title',
  'company',
  'city',
  'country',
  'preferredLanguage',
  'telephoneNumber',
  'mobile',
  'employeeType',
  'costCenter',
  'isActive',
  'hireDate',
  'office',
  'memberOf',
  'description',
];
const MULTI_VALUED = ['proxyAddresses', 'memberOf'];
const HEADER = ['account', 'kind', ...ATTRIBUTES];
const SEPARATOR = ';';

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Row `i` of the export: { account, kind, values } with values by attribute (string, string[] or null). */
function makeRow(i, r) {
  const pick = (a) => a[Math.floor(r() * a.length)];
  const g = pick(FIRST);
  const s = pick(LAST);
  const n = String(i).padStart(6, '0');
  const kind = i % 10 === 9 ? 'Contact' : 'User';
  const mail = `${g}.${s}.${n}@example.test`.toLowerCase();
  let flag = FLAGS[FLAGS.length - 1][0];
  let x = r();
  for (const [text, share] of FLAGS) {
    if (x < share) {
      flag = text;
      break;
    }
    x -= share;
  }
  const groups = [kind === 'User' ? 'All Staff' : 'External Contacts'];
  for (let k = Math.floor(r() * 4); k > 0; k--) {
    const grp = pick(GROUPS);
    if (!groups.includes(grp)) groups.push(grp);
  }
  const values = {
    employeeId: `E${n}`,
    givenName: g,
    sn: s,
    displayName: `${g} ${s}`,
    mail,
    userPrincipalName: `${g.toLowerCase()}${n}@corp.example.test`,
    proxyAddresses: [`SMTP:${mail}`, `smtp:${g[0].toLowerCase()}${n}@alias.example.test`],
    department: pick(DEPTS),
    title: pick(TITLES),
    company: `Company ${Math.floor(r() * 5)}`,
    city: pick(CITIES),
    country: pick(COUNTRIES),
    preferredLanguage: pick(LANGUAGES),
    telephoneNumber: `+33 1 ${String(Math.floor(r() * 1e8)).padStart(8, '0')}`,
    mobile: r() < 0.7 ? `+33 6 ${String(Math.floor(r() * 1e8)).padStart(8, '0')}` : null,
    employeeType: kind === 'Contact' ? 'External' : pick(['Employee', 'Contractor', 'Intern', 'Vendor']),
    costCenter: `CC${Math.floor(r() * 200)}`,
    isActive: flag,
    hireDate: `20${String(10 + Math.floor(r() * 16))}-0${1 + Math.floor(r() * 9)}-1${Math.floor(r() * 9)}`,
    office: `Building ${Math.floor(r() * 50)} / ${Math.floor(r() * 10)}`,
    memberOf: groups,
    description: r() < 0.5 ? `Employee number ${n}` : null,
  };
  return { account: `${g}.${s}.${n}`, kind, values };
}

function field(v) {
  const text = v === null ? '' : Array.isArray(v) ? v.join(SEPARATOR) : String(v);
  return /[",\r\n]/.test(text) || text.trim() !== text ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One row as a CSV line (with its line break). */
function csvLine(row) {
  return [row.account, row.kind, ...ATTRIBUTES.map((a) => row.values[a])].map(field).join(',') + '\n';
}

/**
 * Write `count` rows to `file` (UTF-8, header first), calling `onRow(row)` for each (the benchmark computes
 * the expected answers of its checks from them). Deterministic for a given `seed`.
 */
function writeMeshCsv(file, count, { seed = 42, onRow } = {}) {
  const r = rng(seed);
  const fd = openSync(file, 'w');
  try {
    let chunk = HEADER.join(',') + '\n';
    for (let i = 0; i < count; i++) {
      const row = makeRow(i, r);
      if (onRow) onRow(row);
      chunk += csvLine(row);
      if (chunk.length > 1 << 20) {
        writeSync(fd, chunk);
        chunk = '';
      }
    }
    writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
}

module.exports = { ATTRIBUTES, MULTI_VALUED, HEADER, SEPARATOR, DEPTS, GROUPS, makeRow, csvLine, rng, writeMeshCsv };
