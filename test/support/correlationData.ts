import { nameSimilarity } from '../../lib/sync/correlation/similarity';

/**
 * The people of the correlation tests and bench: an HR file of `n` people and a directory of the same people as
 * an existing directory has them, with the troubles of a first import (docs/correlation.md, "Worked example"):
 * - 10% of the directory entries have no employeeNumber (the key): their names are as in HR (a third), spelt
 *   differently but equal once normalised (case, accents, blanks: a third), with a typo (fuzzy), or unknown
 *   to HR (a nickname: no candidate at all);
 * - 20 name twins (two HR people with one name): 10 pairs whose entries both lack the key (a case each, two
 *   candidates), and 10 pairs whose entries have it (they join);
 * - 10 entries with a wrong key (no such employee) whose name is that of an HR person with no entry of their own.
 *
 * Names are generated so that no two different HR names are similar (Jaro-Winkler below 0.85, checked by brute
 * force), so the expected cases do not depend on the order in which an import meets the entries.
 */

export interface HrRow {
  id: string;
  employeeId: string;
  givenName: string;
  sn: string;
  displayName: string;
}

export type Expect = 'join' | 'noKey' | 'severalCandidates' | 'belowThreshold';

export interface DirectoryEntry {
  uid: string;
  employeeNumber: string | null;
  givenName: string;
  sn: string;
  displayName: string;
  mail: string;
  /** What the import must do with it. */
  expect: Expect;
  /** The HR employee ids the entry is, or may be, (the candidates a case must list). */
  candidates: string[];
  /** How its name matches: exact, normalized, fuzzy, none. */
  how: 'exact' | 'normalized' | 'fuzzy' | 'none';
}

const GIVEN = [
  'José',
  'Zoë',
  'Anaïs',
  'Jürgen',
  'Hélène',
  'Mateo',
  'Ingrid',
  'Kwame',
  'Priya',
  'Olumide',
  'Søren',
  'Yuki',
  'Fatima',
  'Lars',
  'Chloé',
  'Dmitri',
];
const SYLLABLES = ['ba', 'ko', 'ri', 'tu', 'me', 'sa', 'lo', 'vi', 'ne', 'da', 'gu', 'pe', 'zo', 'hi', 'wa', 'fe', 'mu', 'ca', 'ti', 'yo'];

/** A small seeded generator (mulberry32): the same people every time. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ascii = (s: string) => s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');

export function correlationPeople(n: number, threshold = 0.9): { hr: HrRow[]; directory: DirectoryEntry[] } {
  const rnd = random(20261129);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)];
  const word = (syllables: number) => {
    let w = '';
    for (let k = 0; k < syllables; k++) w += pick(SYLLABLES);
    return w[0].toUpperCase() + w.slice(1);
  };
  // A third of the given names carry an accent (a normalised match must see through it).
  const newName = () => {
    const g = rnd() < 0.34 ? pick(GIVEN) + word(1).toLowerCase() : word(3);
    return { givenName: g, sn: word(4) };
  };
  const twins = 20;
  const names: { givenName: string; sn: string }[] = [];
  for (let i = 0; i < n - twins; i++) names.push(newName());
  // The people whose entries make cases get names no other person's is near (brute force over everyone), so
  // that the candidates of their cases do not depend on the order in which the import meets the entries.
  const special = new Set<number>();
  for (let k = 0; k < twins; k++) special.add(k * 3);
  for (let i = 1, m = 0; m < Math.round(n * 0.1) - 20; i++) {
    if (i % 3 === 0 && i < twins * 3) continue;
    special.add(i);
    m++;
  }
  for (let i = n - twins - 1, m = 0; m < 10; i--) {
    if (special.has(i)) continue;
    special.add(i);
    m++;
  }
  const full = (p: { givenName: string; sn: string }) => `${p.givenName} ${p.sn}`;
  for (const i of special) {
    for (let tries = 0; names.some((o, j) => j !== i && nameSimilarity(full(o), full(names[i])) >= 0.85); tries++) {
      if (tries > 50) throw new Error(`correlationPeople: no distinct name found for person ${i}`);
      names[i] = newName();
    }
  }
  // The twins: the last 20 people have the names of 20 earlier people.
  for (let k = 0; k < twins; k++) names.push(names[k * 3]);
  const hr: HrRow[] = names.map((p, i) => ({
    id: `h${i}`,
    employeeId: `E${10000 + i}`,
    givenName: p.givenName,
    sn: p.sn,
    displayName: `${p.givenName} ${p.sn}`,
  }));
  const twinOf = new Map<number, number>();
  for (let k = 0; k < twins; k++) {
    twinOf.set(k * 3, n - twins + k);
    twinOf.set(n - twins + k, k * 3);
  }
  const directory: DirectoryEntry[] = [];
  const missing = Math.round(n * 0.1);
  // Without a key: 10 twin pairs (20 entries), then the rest of the 10% by how the name is spelt.
  const keyless = new Set<number>();
  for (let k = 0; k < 10; k++) {
    keyless.add(k * 3);
    keyless.add(n - twins + k);
  }
  const spelling = new Map<number, DirectoryEntry['how']>();
  const singles: number[] = [];
  for (let i = 1; singles.length < missing - keyless.size; i++) if (!twinOf.has(i) && i < n - twins) singles.push(i);
  const nobody = Math.min(10, Math.floor(singles.length / 4));
  singles.forEach((i, j) => {
    keyless.add(i);
    const rest = singles.length - nobody;
    spelling.set(i, j >= rest ? 'none' : j % 3 === 0 ? 'exact' : j % 3 === 1 ? 'normalized' : 'fuzzy');
  });
  // Wrong keys: 10 people with no entry of their own, met by an entry with a key HR does not have.
  const wrong = new Set<number>();
  for (let i = n - twins - 1; wrong.size < 10; i--) if (!keyless.has(i) && !twinOf.has(i)) wrong.add(i);
  hr.forEach((p, i) => {
    const mail = `${p.id}@dir.test`;
    const base = { uid: `u${i}`, givenName: p.givenName, sn: p.sn, mail };
    if (wrong.has(i)) {
      directory.push({
        ...base,
        employeeNumber: `X${90000 + i}`,
        displayName: p.displayName,
        expect: 'belowThreshold',
        candidates: [p.employeeId],
        how: 'exact',
      });
    } else if (keyless.has(i)) {
      const twin = twinOf.get(i);
      if (twin !== undefined) {
        directory.push({
          ...base,
          employeeNumber: null,
          displayName: p.displayName,
          expect: 'severalCandidates',
          candidates: [p.employeeId, hr[twin].employeeId].sort(),
          how: 'exact',
        });
        return;
      }
      const how = spelling.get(i)!;
      const displayName =
        how === 'exact'
          ? p.displayName
          : how === 'normalized'
            ? `  ${ascii(p.givenName).toUpperCase()}   ${p.sn.toLowerCase()} `
            : how === 'fuzzy'
              ? `${p.givenName} ${p.sn.slice(0, -2)}${p.sn.slice(-1)}${p.sn.slice(-2, -1)}`
              : `Nick ${i} Qwxz`;
      directory.push({ ...base, employeeNumber: null, displayName, expect: 'noKey', candidates: how === 'none' ? [] : [p.employeeId], how });
    } else {
      directory.push({ ...base, employeeNumber: p.employeeId, displayName: p.displayName, expect: 'join', candidates: [p.employeeId], how: 'exact' });
    }
  });
  // The expectations hold by brute force: each entry's name is similar (at the threshold) to its candidates' only.
  for (const d of directory) {
    if (d.expect === 'join') continue;
    const similar = hr.filter((p) => nameSimilarity(p.displayName, d.displayName) >= threshold).map((p) => p.employeeId);
    if (JSON.stringify(similar.sort()) !== JSON.stringify([...d.candidates].sort()))
      throw new Error(`correlationPeople: ${d.uid} '${d.displayName}' is similar to ${similar.join(', ') || 'nobody'}, expected ${d.candidates.join(', ')}`);
  }
  return { hr, directory };
}
