import { Prng } from './prng';

/**
 * The soak test's model of an HR system: a seeded population and, day after day, the changes an HR export
 * shows (docs/tutorial.md's `people.csv`). Everything the oracle needs is in the rows of each day: the model
 * keeps no state the oracle reads besides them.
 *
 * What the days hold, on purpose:
 * - names with commas, accents and apostrophes (`O'Brien`, `Muñoz`, `Smith, Jr.`), and departments whose
 *   names need DN escaping (`Sales, EMEA`, `Legal + Compliance`, `Développement`);
 * - managers hired the same day as their reports (their row often after the report's in the file) or a LATER
 *   day: a report's `manager` then names an employee id that is not in the file yet (a forward reference);
 * - department moves, often of managers with reports (their DN changes, so the reports' `manager` must too);
 * - renames, mail changes, title changes, manager changes;
 * - terminations (the row leaves the file): the leaver's reports are reassigned the same day, or keep naming
 *   the leaver (a dangling reference, as HR files have);
 * - rehires: a leaver's row back with the same employee id.
 */

export interface HrRow {
  employeeId: string;
  givenName: string;
  sn: string;
  mail: string;
  department: string;
  title: string;
  /** The manager's employee id; '' for none. It may name someone not in the file (not hired yet, or left). */
  manager: string;
}

export const HR_COLUMNS: readonly (keyof HrRow)[] = ['employeeId', 'givenName', 'sn', 'mail', 'department', 'title', 'manager'];

/** Engineering and Research exist in the directory beforehand (the tutorial's section 2); the rest are created by the export. */
export const DEPARTMENTS = ['Engineering', 'Research', 'Sales, EMEA', 'Développement', 'Legal + Compliance', 'Finance'] as const;

const GIVEN = ['Grace', 'Alan', 'Ada', 'Katherine', 'Dorothy', 'José', 'Zoë', 'Renée', 'Björn', 'Siobhán', 'Chloé', 'Łukasz', 'Mary Ann', 'Jean-Luc', 'Noor'];
const SURNAMES = [
  'Hopper',
  'Turing',
  'Lovelace',
  'Johnson',
  'Vaughan',
  "O'Brien",
  'Muñoz',
  'Smith, Jr.',
  'Núñez',
  'Müller',
  'Lefèvre',
  "D'Angelo",
  'García Márquez',
  'Østergaard',
  'Nguyễn',
  'van der Berg',
];
const TITLES = ['Engineer', 'Analyst', 'Senior Engineer', 'Consultant', 'Accountant', 'Designer', 'Counsel, Contracts'];
const MANAGER_TITLES = ['Head of Team', 'Manager', 'Director'];

/** The part of a mail address made of a name: ASCII letters only (the directory's `mail` is IA5). */
function mailPart(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/ł/gi, 'l')
    .replace(/ø/gi, 'o')
    .toLowerCase()
    .replace(/[^a-z]/g, '');
}

export function goodMail(givenName: string, sn: string, id: string, domain = 'example.com'): string {
  return `${mailPart(givenName)}.${mailPart(sn)}.${id.toLowerCase()}@${domain}`;
}

/**
 * A mail the staff table refuses (its CHECK wants an `@`): HR typed a dot for the at sign. The soak's refused
 * add (a fault HR fixes the next day).
 */
export function refusedMail(row: HrRow): string {
  return row.mail.replace('@', '.');
}

/** True when PostgreSQL's `staff_mail_check` (see harness.ts) accepts the mail. */
export const staffAcceptsMail = (mail: string): boolean => mail.includes('@');

export type EventKind =
  | 'hire'
  | 'futureHire'
  | 'move'
  | 'managerMove'
  | 'rename'
  | 'mailChange'
  | 'titleChange'
  | 'managerChange'
  | 'termination'
  | 'danglingReports'
  | 'rehire'
  | 'refusedAdd'
  | 'fixedMail';

export interface HrDay {
  day: number;
  /** The HR file's rows, in file order (shuffled: a manager's row is as often after a report's as before). */
  rows: HrRow[];
  /** How many of each event the day holds. */
  events: Partial<Record<EventKind, number>>;
  /** Employee ids hired today with a mail the staff table refuses (fixed by HR the next day). */
  refused: string[];
  /** Employee ids whose refused mail HR fixed today. */
  fixed: string[];
}

export interface DayOptions {
  /** Give one of today's hires (one nobody names as manager) a mail the staff table refuses. */
  refuseAnAdd?: boolean;
}

/** The HR system. `day0()` first, then `nextDay()` once per day. */
export class HrModel {
  private readonly rng: Prng;
  private readonly active = new Map<string, HrRow>();
  /** Leavers (a rehire brings one back with the same id). */
  private readonly left = new Map<string, HrRow>();
  /** People named as a manager before their hire: hired on `day`. */
  private readonly future = new Map<string, { row: HrRow; day: number }>();
  private nextId = 1;
  private today = 0;
  /** Ids whose mail HR will fix tomorrow, with the good mail. */
  private toFix = new Map<string, string>();

  constructor(
    seed: number,
    private readonly size: number,
  ) {
    this.rng = new Prng(seed ^ 0x5eed);
  }

  private newId(): string {
    return `E${String(this.nextId++).padStart(5, '0')}`;
  }

  private newPerson(isManager: boolean): HrRow {
    const id = this.newId();
    const givenName = this.rng.pick(GIVEN);
    const sn = this.rng.pick(SURNAMES);
    return {
      employeeId: id,
      givenName,
      sn,
      mail: goodMail(givenName, sn, id),
      department: this.rng.pick(DEPARTMENTS),
      title: isManager ? this.rng.pick(MANAGER_TITLES) : this.rng.pick(TITLES),
      manager: '',
    };
  }

  /** A person to be hired on a later day (1 or 2 days on), named as a manager before then. */
  private futureManager(): HrRow {
    const row = this.newPerson(true);
    this.future.set(row.employeeId, { row, day: this.today + 1 + this.rng.int(2) });
    return row;
  }

  private reportsOf(id: string): HrRow[] {
    return [...this.active.values()].filter((r) => r.manager === id);
  }

  /** Day 0: the initial population; managers hired the same day (their rows anywhere in the file) or later. */
  day0(): HrDay {
    const events: HrDay['events'] = {};
    const count = (k: EventKind, n = 1) => (events[k] = (events[k] ?? 0) + n);
    const managers: HrRow[] = [];
    const people: HrRow[] = [];
    for (let i = 0; i < this.size; i++) {
      const isManager = i === 0 || this.rng.chance(0.15);
      const row = this.newPerson(isManager);
      (isManager ? managers : people).push(row);
    }
    for (const row of [...managers.slice(1), ...people]) {
      if (this.rng.chance(0.08)) {
        row.manager = this.futureManager().employeeId;
        count('futureHire');
      } else if (this.rng.chance(0.9)) {
        // A manager of the same day, not the person itself (managers report to other managers).
        const m = this.rng.pick(managers);
        if (m.employeeId !== row.employeeId) row.manager = m.employeeId;
      }
    }
    for (const row of [...managers, ...people]) {
      this.active.set(row.employeeId, row);
      count('hire');
    }
    return { day: 0, rows: this.snapshot(), events, refused: [], fixed: [] };
  }

  /** The next day's HR file and what happened in it. */
  nextDay(options: DayOptions = {}): HrDay {
    this.today++;
    const rng = this.rng;
    const events: HrDay['events'] = {};
    const count = (k: EventKind, n = 1) => (events[k] = (events[k] ?? 0) + n);
    const n = (rate: number) => Math.max(1, Math.round(rate * this.size));
    const touchedToday = new Set<string>();

    // HR fixes yesterday's refused mails first (those people are left alone otherwise today).
    const fixed: string[] = [];
    for (const [id, mail] of this.toFix) {
      const row = this.active.get(id);
      if (!row) continue;
      row.mail = mail;
      fixed.push(id);
      touchedToday.add(id);
      count('fixedMail');
    }
    this.toFix = new Map();

    // People named as managers on an earlier day, hired today.
    for (const [id, f] of [...this.future]) {
      if (f.day !== this.today) continue;
      this.future.delete(id);
      this.active.set(id, f.row);
      touchedToday.add(id);
      count('hire');
    }

    // Rehires: a leaver comes back with the same employee id, maybe in another department.
    for (const row of rng.sample([...this.left.values()], n(0.01))) {
      this.left.delete(row.employeeId);
      if (rng.chance(0.5)) row.department = rng.pick(DEPARTMENTS);
      if (row.manager && !this.active.has(row.manager) && rng.chance(0.5)) row.manager = '';
      this.active.set(row.employeeId, row);
      touchedToday.add(row.employeeId);
      count('rehire');
    }

    // Hires: their manager an existing person, another of today's hires, someone hired later, or nobody.
    const hires: HrRow[] = [];
    for (let i = 0; i < n(0.03); i++) hires.push(this.newPerson(rng.chance(0.2)));
    for (const row of hires) {
      const r = rng.next();
      const existing = [...this.active.values()];
      if (r < 0.55 && existing.length) row.manager = rng.pick(existing).employeeId;
      else if (r < 0.7 && hires.length > 1) row.manager = rng.pick(hires.filter((h) => h !== row)).employeeId;
      else if (r < 0.85) {
        row.manager = this.futureManager().employeeId;
        count('futureHire');
      }
    }
    for (const row of hires) {
      this.active.set(row.employeeId, row);
      touchedToday.add(row.employeeId);
      count('hire');
    }

    const settled = () => [...this.active.values()].filter((r) => !touchedToday.has(r.employeeId));

    // Department moves, at least half of them of managers with reports (their reports' manager DN changes).
    const managersWithReports = settled().filter((r) => this.reportsOf(r.employeeId).length > 0);
    const movers = [...rng.sample(managersWithReports, Math.ceil(n(0.03) / 2)), ...rng.sample(settled(), Math.floor(n(0.03) / 2))];
    for (const row of new Set(movers)) {
      const to = DEPARTMENTS.filter((d) => d !== row.department);
      row.department = rng.pick(to);
      count(this.reportsOf(row.employeeId).length ? 'managerMove' : 'move');
    }
    for (const row of rng.sample(settled(), n(0.02))) {
      row.sn = rng.pick(SURNAMES.filter((s) => s !== row.sn));
      if (rng.chance(0.3)) row.givenName = rng.pick(GIVEN.filter((g) => g !== row.givenName));
      count('rename');
    }
    for (const row of rng.sample(settled(), n(0.02))) {
      row.mail = goodMail(row.givenName, row.sn, row.employeeId, rng.pick(['example.com', 'example.org', 'mail.example.com']));
      count('mailChange');
    }
    for (const row of rng.sample(settled(), n(0.02))) {
      row.title = rng.pick([...TITLES, ...MANAGER_TITLES].filter((t) => t !== row.title));
      count('titleChange');
    }
    for (const row of rng.sample(settled(), n(0.02))) {
      const others = [...this.active.values()].filter((r) => r.employeeId !== row.employeeId && r.employeeId !== row.manager);
      row.manager = rng.chance(0.15) || !others.length ? '' : rng.pick(others).employeeId;
      count('managerChange');
    }

    // Terminations: the row leaves the file. The leaver's reports are reassigned today, or keep naming the
    // leaver (a dangling reference the targets must not keep).
    for (const row of rng.sample(settled(), n(0.02))) {
      this.active.delete(row.employeeId);
      this.left.set(row.employeeId, row);
      count('termination');
      const reports = this.reportsOf(row.employeeId);
      if (!reports.length) continue;
      if (rng.chance(0.5)) {
        const others = [...this.active.values()];
        for (const rep of reports) {
          const m = others.length ? rng.pick(others) : undefined;
          rep.manager = m && m.employeeId !== rep.employeeId ? m.employeeId : '';
        }
      } else count('danglingReports');
    }

    // The refused add: one of today's hires that nobody names as a manager (a refused manager would make
    // its reports' rows wait on it too, which is a different fault).
    const refused: string[] = [];
    if (options.refuseAnAdd) {
      const named = new Set([...this.active.values()].map((r) => r.manager));
      const candidates = hires.filter((h) => this.active.has(h.employeeId) && !named.has(h.employeeId));
      if (candidates.length) {
        const row = rng.pick(candidates);
        this.toFix.set(row.employeeId, row.mail);
        row.mail = refusedMail(row);
        refused.push(row.employeeId);
        count('refusedAdd');
      }
    }
    return { day: this.today, rows: this.snapshot(), events, refused, fixed };
  }

  /** The rows as the HR file has them today (copies, shuffled). */
  private snapshot(): HrRow[] {
    return this.rng.shuffle([...this.active.values()].map((r) => ({ ...r })));
  }
}

/** The HR file's text: a header line and a row per person, quoted where a value needs it (RFC 4180). */
export function hrCsv(rows: readonly HrRow[]): string {
  const esc = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  return [HR_COLUMNS.join(','), ...rows.map((r) => HR_COLUMNS.map((c) => esc(r[c])).join(','))].join('\n') + '\n';
}
