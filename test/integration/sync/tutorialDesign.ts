import { Client } from 'ldapts';
import { dnKey } from '../../../lib/mesh/model';
import type { Postgres } from '../../support/postgres';
import type { ServiceUnderTest } from '../../support/service';
import type { SlapdFixture } from '../ldap/ldapFixture';
import { STAFF_QUERY, STAFF_STATEMENTS, STAFF_TABLE, tutorialRules } from '../../support/tutorialDesign';
import { folder, rule, runExport, runImport, writeCsv } from './syncSupport';

/**
 * The tutorial's design (docs/tutorial.md) as a test fixture: an HR file (one row per person, the manager as
 * the manager's employee id, a reference column) -> a directory with one OU per department (slapd) and a
 * PostgreSQL `staff` table whose `manager_id` is a deferred foreign key, written by the tutorial's own
 * statements (the update names every column). The targets are read back from outside (ldapts, pg) and compared
 * with what the HR rows alone imply.
 */
export interface HrRow {
  employeeId: string;
  givenName: string;
  sn: string;
  mail: string;
  department: string;
  title: string;
  manager: string;
}

export const HR_HEADER = ['employeeId', 'givenName', 'sn', 'mail', 'department', 'title', 'manager'];

/** What the directory should hold of one person. */
export interface ExpectedEntry {
  dn: string;
  cn: string;
  mail: string;
  manager: string | null;
}

export class TutorialDesign {
  hr = '';
  dir = '';
  staff = '';
  readonly hrDir = folder('ims-tutorial-hr-');
  private admin: Client | undefined;

  constructor(
    readonly rt: ServiceUnderTest,
    readonly f: SlapdFixture,
    readonly pg: Postgres,
    readonly database: string,
    readonly options: { dirConfig?: Record<string, unknown>; staffConfig?: Record<string, unknown> } = {},
  ) {}

  get people(): string {
    return this.f.base;
  }

  dnOf(id: string, department: string): string {
    const esc = (v: string) => v.replace(/([,+"\\<>;=])/g, '\\$1').replace(/^([ #])/, '\\$1');
    return `uid=${esc(id)},ou=${esc(department)},${this.people}`;
  }

  async setUp(): Promise<this> {
    await this.pg.query(STAFF_TABLE, [], this.database);
    const rt = this.rt;
    writeCsv(this.hrDir, 'people.csv', HR_HEADER, []);
    const hr = await rt.call('POST', 'connectors', {
      body: {
        name: 'HR',
        type: 'custom',
        config: {
          implementation: 'file',
          objectType: 'User',
          settings: { path: this.hrDir, anchorColumn: 'employeeId', referenceColumns: { manager: 'User' } },
        },
      },
    });
    if (hr.status !== 201) throw new Error(`HR: ${hr.status} ${hr.text}`);
    this.hr = hr.body.id;
    const dir = await rt.call('POST', 'connectors', {
      body: {
        name: 'Directory',
        type: 'ldap',
        config: this.f.config({
          deletionThreshold: { objects: 1000, percent: 100 },
          createContainers: true,
          ...(this.options.dirConfig ?? {}),
        } as never),
      },
    });
    if (dir.status !== 201) throw new Error(`Directory: ${dir.status} ${dir.text}`);
    this.dir = dir.body.id;
    const pg = this.pg;
    const staff = await rt.call('POST', 'connectors', {
      body: {
        name: 'Staff database',
        type: 'sql',
        config: {
          dialect: 'postgres',
          host: pg.host,
          port: pg.port,
          database: this.database,
          user: pg.user,
          password: pg.password,
          anchorColumn: 'employee_id',
          fullImportQuery: STAFF_QUERY,
          referenceColumns: { manager_id: 'User' },
          exportStatements: STAFF_STATEMENTS,
          deletionThreshold: { objects: 1000, percent: 100 },
          ...(this.options.staffConfig ?? {}),
        },
      },
    });
    if (staff.status !== 201) throw new Error(`Staff: ${staff.status} ${staff.text}`);
    this.staff = staff.body.id;

    await tutorialRules((body) => rule(rt, body), { hr: this.hr, directory: this.dir, staff: this.staff });
    return this;
  }

  writeHr(rows: HrRow[]): void {
    writeCsv(this.hrDir, 'people.csv', HR_HEADER, rows as unknown as Record<string, string>[]);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  importHr(runType: 'FullImport' | 'DeltaImport' = 'FullImport'): Promise<any> {
    return runImport(this.rt, this.hr, { runType });
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  exportTo(connectorId: string, body: Record<string, unknown> = {}): Promise<any> {
    return runExport(this.rt, connectorId, body);
  }

  /** The tutorial's confirming imports of both targets. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async confirm(): Promise<any[]> {
    return [await runImport(this.rt, this.dir, { runType: 'FullImport' }), await runImport(this.rt, this.staff, { runType: 'FullImport' })];
  }

  private async client(): Promise<Client> {
    if (!this.admin) {
      this.admin = new Client({ url: this.f.slapd.url });
      await this.admin.bind(this.f.slapd.rootDN, this.f.slapd.rootPassword);
    }
    return this.admin;
  }

  /** Every person entry below the people OU: employeeNumber -> the entries that carry it. */
  async directory(): Promise<Map<string, { dn: string; cn: string; mail: string; manager: string[]; title: string }[]>> {
    const c = await this.client();
    const { searchEntries } = await c.search(this.people, {
      scope: 'sub',
      filter: '(objectClass=inetOrgPerson)',
      attributes: ['employeeNumber', 'cn', 'mail', 'manager', 'title'],
    });
    const out = new Map<string, { dn: string; cn: string; mail: string; manager: string[]; title: string }[]>();
    const list = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : v === undefined ? [] : [String(v)]);
    for (const e of searchEntries) {
      const id = String(e.employeeNumber);
      const entry = { dn: e.dn, cn: String(e.cn), mail: String(e.mail ?? ''), manager: list(e.manager), title: String(e.title ?? '') };
      out.set(id, [...(out.get(id) ?? []), entry]);
    }
    return out;
  }

  async staffRows(): Promise<Map<string, Record<string, string | null>>> {
    const rows = await this.pg.query<Record<string, string | null>>('SELECT * FROM staff ORDER BY employee_id', [], this.database);
    return new Map(rows.map((r) => [String(r.employee_id), r]));
  }

  /**
   * Every difference between the targets and what the HR rows alone imply (an empty list: the targets equal the
   * mesh). DNs compared as DNs.
   */
  async differences(hr: HrRow[]): Promise<string[]> {
    const byId = new Map(hr.map((r) => [r.employeeId, r]));
    const out: string[] = [];
    const dir = await this.directory();
    const staff = await this.staffRows();
    for (const r of hr) {
      const entries = dir.get(r.employeeId) ?? [];
      const boss = r.manager ? byId.get(r.manager) : undefined;
      const expectedManager = boss ? this.dnOf(boss.employeeId, boss.department) : null;
      if (entries.length !== 1) out.push(`directory ${r.employeeId}: ${entries.length} entries`);
      for (const e of entries) {
        if (dnKey(e.dn) !== dnKey(this.dnOf(r.employeeId, r.department))) out.push(`directory ${r.employeeId}: dn ${e.dn}`);
        if (e.cn !== `${r.givenName} ${r.sn}`) out.push(`directory ${r.employeeId}: cn ${e.cn}`);
        if (e.mail !== r.mail) out.push(`directory ${r.employeeId}: mail ${e.mail}`);
        if (e.title !== r.title) out.push(`directory ${r.employeeId}: title ${e.title}`);
        const got = e.manager.map(dnKey).sort().join(' | ');
        const want = expectedManager ? dnKey(expectedManager) : '';
        if (got !== want) out.push(`directory ${r.employeeId}: manager [${e.manager.join(' | ')}] expected [${expectedManager ?? ''}]`);
      }
      const row = staff.get(r.employeeId);
      if (!row) out.push(`staff ${r.employeeId}: missing`);
      else {
        const want: Record<string, string | null> = {
          given_name: r.givenName,
          surname: r.sn,
          mail: r.mail,
          department: r.department,
          manager_id: boss ? boss.employeeId : null,
        };
        for (const [k, v] of Object.entries(want))
          if ((row[k] ?? null) !== v) out.push(`staff ${r.employeeId}: ${k} ${JSON.stringify(row[k])} expected ${JSON.stringify(v)}`);
      }
    }
    for (const id of dir.keys()) if (!byId.has(id)) out.push(`directory ${id}: not in HR`);
    for (const id of staff.keys()) if (!byId.has(id)) out.push(`staff ${id}: not in HR`);
    return out;
  }

  async close(): Promise<void> {
    await this.admin?.unbind().catch(() => undefined);
  }
}

export const person = (employeeId: string, department: string, manager = '', extra: Partial<HrRow> = {}): HrRow => ({
  employeeId,
  givenName: `Given${employeeId}`,
  sn: `Sur${employeeId}`,
  mail: `${employeeId.toLowerCase()}@example.com`,
  department,
  title: 'Engineer',
  manager,
  ...extra,
});
