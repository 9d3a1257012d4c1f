import { ConnectorError, type DeltaPage, type ImportPage } from '../../../lib/connectors/sdk';
import { testSqlConnection, validateSqlConfig } from '../../../lib/connectors/sql';
import type { SqlConnector } from '../../../lib/connectors/sql';
import { startMariaDb, type MariaDb } from '../../support/mariadb';
import { startPostgres, type Postgres } from '../../support/postgres';
import { describeWithServer } from '../../support/servers';
import { PEOPLE } from '../../support/connectorContract';
import { mariaServer, pgServer, SqlContractFixture, type SqlServer } from './sqlFixture';

/** SQL connector behaviour beyond the contract, on each real server. */

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
const full = (c: SqlConnector, pageSize = 100) => all<ImportPage>(c.fullImport({ pageSize }));
const delta = (c: SqlConnector, wm: string | null) => all<DeltaPage>(c.deltaImport(wm, { pageSize: 100 }));
const objects = (pages: ImportPage[]) => pages.flatMap((p) => p.objects);
const changes = (pages: DeltaPage[]) => pages.flatMap((p) => p.changes);

async function rejects(p: Promise<unknown>): Promise<ConnectorError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectorError);
  return err as ConnectorError;
}

const INJECTION = "x'); DROP TABLE people; --";

function behaviour(label: string, server: () => SqlServer, kill: () => Promise<void>) {
  let f: SqlContractFixture;
  beforeEach(async () => {
    f = await SqlContractFixture.create(server());
    await f.seed(PEOPLE);
  });
  afterEach(async () => {
    await f.cleanup();
  });

  test(`${label}: a full import that stays open longer than timeoutSeconds completes: the timeout bounds each fetch, not the whole cursor`, async () => {
    const c = f.connector({ timeoutSeconds: 1 });
    const seen: string[] = [];
    const started = Date.now();
    for await (const page of c.fullImport({ pageSize: 1 })) {
      seen.push(...page.objects.map((o) => o.anchor));
      // The engine plans and writes each page before it asks for the next: here, longer than the timeout.
      await new Promise((r) => setTimeout(r, 700));
    }
    expect(Date.now() - started).toBeGreaterThan(1500);
    expect(seen.sort()).toEqual(PEOPLE.map((p) => p.key).sort());
    await c.close();
  });

  test(`${label}: soft-delete column: a flagged row leaves the full import and is a delete in the delta`, async () => {
    const c = f.connector({
      fullImportQuery: f.config().fullImportQuery.replace(/ FROM people WHERE deleted = false/, ', deleted FROM people'),
      deltaImportQuery: f
        .config()
        .deltaImportQuery!.replace(/ FROM people/, ', deleted FROM people')
        .replace(/ AND deleted = false/, ''),
      deleteDetection: { mode: 'softDeleteColumn', column: 'deleted', value: true },
    });
    const pages = await full(c);
    expect(objects(pages)).toHaveLength(PEOPLE.length);
    await f.exec(`UPDATE people SET deleted = true${f.server.dialect === 'mysql' ? ', updated_at = CURRENT_TIMESTAMP(6)' : ''} WHERE employee_id = 'E003'`);
    const d = changes(await delta(c, pages[pages.length - 1].watermark!));
    expect(d.map((ch) => [ch.kind, ch.anchor])).toEqual([['delete', 'E003']]);
    expect(objects(await full(c)).map((o) => o.anchor)).not.toContain('E003');
  });

  test(`${label}: delete detection by query and by anchor diff every 2nd delta`, async () => {
    const viaQuery = f.connector({
      deleteDetection: {
        mode: 'query',
        query: `SELECT employee_id FROM people_deleted WHERE ${f.server.dialect === 'postgres' ? 'row_version > :watermark' : 'deleted_at >= :watermark'}`,
      },
    });
    const diff = f.connector({ deleteDetection: { mode: 'anchorDiff', everyNthDelta: 2 } });
    const wq = (await full(viaQuery)).pop()!.watermark!;
    const wd = (await full(diff)).pop()!.watermark!;
    await f.remove('E004');
    expect(changes(await delta(viaQuery, wq)).map((ch) => [ch.kind, ch.anchor])).toEqual([['delete', 'E004']]);
    const first = await delta(diff, wd);
    expect(changes(first)).toEqual([]); // the 1st delta does not diff anchors
    const second = await delta(diff, first[first.length - 1].nextWatermark!);
    expect(changes(second).map((ch) => [ch.kind, ch.anchor])).toEqual([['delete', 'E004']]);
  });

  test(`${label}: references and multi-valued attributes`, async () => {
    const byKey = new Map(objects(await full(f.connector())).map((o) => [o.anchor, o]));
    expect(byKey.get('E004')!.references).toEqual({ manager_employee_id: ['E002'] });
    expect(byKey.get('E001')!.references).toEqual({});
    expect([...(byKey.get('E001')!.attributes.proxyAddresses as string[])].sort()).toEqual(['smtp:ada@example.test', 'smtp:countess@example.test']);
    expect(byKey.get('E002')!.attributes.proxyAddresses).toEqual([]);
    const s = await f.connector().schema();
    const attrs = new Map(s.objectTypes[0].attributes.map((a) => [a.name, a]));
    expect(attrs.get('manager_employee_id')!.reference).toEqual({ objectType: 'User', resolveBy: 'anchor' });
    expect(attrs.get('proxyAddresses')!.multiValued).toBe(true);
    expect(attrs.has(f.config().deltaColumn!)).toBe(false);
  });

  test(`${label}: injection attempts in values are stored, imported and exported literally`, async () => {
    const c = f.connector();
    const evil = { key: "E9'--", givenName: INJECTION, sn: "Robert'); DROP TABLE people_proxy;--", mail: ':mail', proxyAddresses: ["a'b", '$1 ? :anchor'] };
    const [r] = await c.exportBatch([f.exportAdd(evil)]);
    expect(r.status).toBe('success');
    const [u] = await c.exportBatch([f.exportUpdate("E9'--", "E9'--", { mail: "'; DELETE FROM people; --" })]);
    expect(u.status).toBe('success');
    const got = objects(await full(c)).find((o) => o.anchor === "E9'--")!;
    expect(got.attributes.given_name).toBe(INJECTION);
    expect(got.attributes.sn).toBe(evil.sn);
    expect(got.attributes.mail).toBe("'; DELETE FROM people; --");
    expect([...(got.attributes.proxyAddresses as string[])].sort()).toEqual(['$1 ? :anchor', "a'b"]);
    expect(objects(await full(c))).toHaveLength(PEOPLE.length + 1);
    const rows = await f.exec('SELECT given_name FROM people WHERE employee_id = ?', ["E9'--"]);
    expect(rows[0].given_name).toBe(INJECTION);
  });

  test(`${label}: a batch with a failing row is retried row by row; the others land`, async () => {
    const c = f.connector();
    const results = await c.exportBatch([
      f.exportAdd({ key: 'E801', givenName: 'One', sn: 'Ok' }),
      f.exportAdd({ key: 'E001', givenName: 'Dup', sn: 'Licate' }),
      f.exportUpdate('E002', 'E002', { mail: 'batch@example.test' }),
      f.exportUpdate('NOPE', 'NOPE', { mail: 'x@example.test' }),
      f.exportAdd({ key: 'E802', givenName: 'Two', sn: 'Ok' }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['success', 'error', 'success', 'error', 'success']);
    if (results[1].status === 'error') expect(results[1].error.code).toBe('already_exists');
    if (results[3].status === 'error') expect(results[3].error.code).toBe('not_found');
    const byKey = new Map(objects(await full(c)).map((o) => [o.anchor, o]));
    expect(byKey.has('E801') && byKey.has('E802')).toBe(true);
    expect(byKey.get('E001')!.attributes.given_name).toBe('Ada');
    expect(byKey.get('E002')!.attributes.mail).toBe('batch@example.test');
  });

  test(`${label}: a batch of one-statement changes (sent together on PostgreSQL): results in order; a row refused in the middle goes row by row, every other row lands`, async () => {
    // One statement per change: on PostgreSQL the whole batch is pipelined in one transaction.
    const single = {
      exportStatements: {
        insert:
          'INSERT INTO people (employee_id, given_name, sn, mail, manager_employee_id, department) VALUES (:employee_id, :given_name, :sn, :mail, :manager_employee_id, :department)',
        update: 'UPDATE people SET mail = :mail WHERE employee_id = :anchor',
        delete: 'DELETE FROM people WHERE employee_id = :anchor',
      },
    };
    const c = f.connector(single);
    const adds = Array.from({ length: 300 }, (_, i) => f.exportAdd({ key: `P${String(i).padStart(3, '0')}`, givenName: `G${i}`, sn: `S${i}` }));
    const clean = await c.exportBatch(adds);
    expect(clean.map((r) => (r.status === 'success' ? r.anchor : r.error.message))).toEqual(adds.map((_, i) => `P${String(i).padStart(3, '0')}`));
    expect(Number((await f.exec("SELECT count(*) AS n FROM people WHERE employee_id LIKE 'P%'"))[0].n)).toBe(300);
    // A duplicate at 150 of 300 (refused by its statement) and an update of a row that is not there.
    const mixed = [
      ...Array.from({ length: 150 }, (_, i) => f.exportAdd({ key: `Q${String(i).padStart(3, '0')}`, givenName: 'Q', sn: 'Q' })),
      f.exportAdd({ key: 'P007', givenName: 'Dup', sn: 'Dup' }),
      f.exportUpdate('NOPE', 'NOPE', { mail: 'x@example.test' }),
      ...Array.from({ length: 148 }, (_, i) =>
        f.exportUpdate(`P${String(i).padStart(3, '0')}`, `P${String(i).padStart(3, '0')}`, { mail: `p${i}@example.test` }),
      ),
    ];
    const results = await c.exportBatch(mixed);
    expect(results).toHaveLength(300);
    expect(results.filter((r) => r.status === 'error').map((r) => (r.status === 'error' ? [r.anchor, r.error.code] : []))).toEqual([
      ['P007', 'already_exists'],
      ['NOPE', 'not_found'],
    ]);
    const rows = await f.exec("SELECT employee_id, given_name, mail FROM people WHERE employee_id LIKE 'P%' OR employee_id LIKE 'Q%' ORDER BY employee_id");
    expect(rows).toHaveLength(450);
    const byKey = new Map(rows.map((r) => [r.employee_id as string, r]));
    expect(byKey.get('P007')!.given_name).toBe('G7');
    for (let i = 0; i < 148; i++) expect(byKey.get(`P${String(i).padStart(3, '0')}`)!.mail).toBe(`p${i}@example.test`);
    expect(byKey.get('P149')!.mail).toBeNull();
  });

  test(`${label}: a batch of 800 one-statement changes, a row refused at 300 and another at 700 (on PostgreSQL the part after each is on the wire already): results in order, every other row lands`, async () => {
    const c = f.connector({
      exportStatements: {
        insert: 'INSERT INTO people (employee_id, given_name, sn) VALUES (:employee_id, :given_name, :sn)',
        update: 'UPDATE people SET mail = :mail WHERE employee_id = :anchor',
        delete: 'DELETE FROM people WHERE employee_id = :anchor',
      },
    });
    const key = (i: number) => `R${String(i).padStart(3, '0')}`;
    // Row 300 adds a key the table holds already (E001, seeded); row 700 updates a row that is not there.
    const batch = Array.from({ length: 800 }, (_, i) =>
      i === 300
        ? f.exportAdd({ key: 'E001', givenName: 'Dup', sn: 'Dup' })
        : i === 700
          ? f.exportUpdate('NOPE', 'NOPE', { mail: 'x@example.test' })
          : f.exportAdd({ key: key(i), givenName: `G${i}`, sn: `S${i}` }),
    );
    const results = await c.exportBatch(batch);
    expect(results.map((r) => (r.status === 'success' ? r.anchor : `${r.anchor}:${r.error.code}`))).toEqual(
      batch.map((_, i) => (i === 300 ? 'E001:already_exists' : i === 700 ? 'NOPE:not_found' : key(i))),
    );
    const rows = await f.exec("SELECT employee_id, given_name FROM people WHERE employee_id LIKE 'R%' ORDER BY employee_id");
    expect(rows.map((r) => r.employee_id)).toEqual(batch.flatMap((_, i) => (i === 300 || i === 700 ? [] : [key(i)])));
    expect(rows.every((r) => r.given_name === `G${Number(String(r.employee_id).slice(1))}`)).toBe(true);
    const e001 = await f.exec("SELECT given_name FROM people WHERE employee_id = 'E001'");
    expect(e001[0].given_name).not.toBe('Dup');
    // The same 800 once more as updates, none refused: every row's mail in one transaction (parts overlapping).
    const updates = Array.from({ length: 800 }, (_, i) =>
      i === 300 || i === 700 ? undefined : f.exportUpdate(key(i), key(i), { mail: `r${i}@example.test` }),
    ).filter((u): u is NonNullable<typeof u> => !!u);
    const updated = await c.exportBatch(updates);
    expect(updated.every((r) => r.status === 'success')).toBe(true);
    const mails = await f.exec("SELECT employee_id, mail FROM people WHERE employee_id LIKE 'R%' ORDER BY employee_id");
    expect(mails.map((r) => r.mail)).toEqual(updates.map((_, k) => `r${Number(String(mails[k].employee_id).slice(1))}@example.test`));
  });

  test(`${label}: wrong password, unknown table, unknown column, timeout: clear codes, no secret`, async () => {
    const wrong = await rejects(f.unreachableConnector().testConnection());
    expect(wrong.code).toBe('authentication_failed');
    expect(wrong.retriable).toBe(false);
    for (const s of f.secrets) expect(wrong.message).not.toContain(s);

    const table = await rejects(full(f.connector({ fullImportQuery: 'SELECT employee_id FROM no_such_table' })));
    expect(table.code).toBe('configuration_invalid');
    expect(table.message).toMatch(/no_such_table/);

    const col = await rejects(testSqlConnection(f.config({ anchorColumn: 'nope' })));
    expect(col.code).toBe('configuration_invalid');
    expect(col.message).toMatch(/anchorColumn 'nope'/);

    const param = await rejects(testSqlConnection(f.config({ exportStatements: { update: 'UPDATE people SET mail = :nosuch WHERE employee_id = :anchor' } })));
    expect(param.message).toMatch(/:nosuch/);

    const sleep = f.server.dialect === 'postgres' ? 'SELECT employee_id, pg_sleep(3) AS s FROM people' : 'SELECT employee_id, SLEEP(3) AS s FROM people';
    const slow = await rejects(full(f.connector({ fullImportQuery: sleep, deltaImportQuery: undefined, deltaColumn: undefined, timeoutSeconds: 1 })));
    expect(slow.code).toBe('timeout');
    expect(slow.retriable).toBe(true);
  });

  test(`${label}: create-time validation without a server`, () => {
    const raw = f.server.dialect === 'postgres' ? '$1' : '?';
    const errs = validateSqlConfig(
      f.config({
        deltaImportQuery: "SELECT * FROM people WHERE note = ':watermark'",
        exportStatements: { insert: `INSERT INTO people (mail) VALUES (${raw})` },
      }),
    );
    expect(errs.map((e) => e.path).sort()).toEqual(['/deltaImportQuery', '/exportStatements/insert']);
    expect(validateSqlConfig(f.config())).toEqual([]);
  });

  test(`${label}: server gone mid-run: connection_failed, retriable, and the watermark is not advanced`, async () => {
    await f.seed(Array.from({ length: 300 }, (_, i) => ({ key: `K${String(i).padStart(4, '0')}`, givenName: 'G', sn: 'S' })));
    const c = f.connector();
    const wm = (await full(c)).pop()!.watermark!;
    const it = c.fullImport({ pageSize: 50 })[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    await kill();
    const e = await rejects(
      (async () => {
        for (;;) if ((await it.next()).done) break;
      })(),
    );
    expect(['connection_failed']).toContain(e.code);
    expect(e.retriable).toBe(true);
    for (const s of f.secrets) expect(e.message).not.toContain(s);
    const d = await rejects(delta(c, wm));
    expect(d.code).toBe('connection_failed');
  });
}

describeWithServer('postgres')('sql connector behaviour on PostgreSQL', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    await pg?.stop();
  });
  behaviour(
    'postgres',
    () => pgServer(pg),
    async () => {
      await pg.kill();
    },
  );
});

describeWithServer('mariadb')('sql connector behaviour on MariaDB', () => {
  let db: MariaDb;
  beforeAll(async () => {
    db = await startMariaDb();
  });
  afterAll(async () => {
    await db?.stop();
  });
  behaviour(
    'mariadb',
    () => mariaServer(db),
    async () => {
      await db.kill();
    },
  );
});

describeWithServer('postgres')('sql connector over TLS (PostgreSQL that accepts TCP only over TLS)', () => {
  let pg: Postgres;
  let f: SqlContractFixture;
  beforeAll(async () => {
    pg = await startPostgres({ tls: true });
    // The server's certificate names localhost.
    f = await SqlContractFixture.create({ ...pgServer(pg), host: 'localhost' });
    await f.seed(PEOPLE);
  });
  afterAll(async () => {
    await f?.cleanup();
    await pg?.stop();
  });

  test('ssl with the CA: connects and imports; ssl off or the system trust: clear errors, no secret', async () => {
    const ok = f.connector({ ssl: { ca: pg.caCertificate! } });
    expect((await testSqlConnection(f.config({ ssl: { ca: pg.caCertificate! } }))).message).toBeTruthy();
    expect(
      objects(await full(ok))
        .map((o) => o.anchor)
        .sort(),
    ).toEqual(PEOPLE.map((p) => p.key).sort());
    await ok.close();

    // Without TLS the server has no entry for the connection.
    const plain = await rejects(testSqlConnection(f.config({ ssl: false })));
    expect(plain.message).toMatch(/pg_hba|encryption|SSL/i);
    // A self-signed certificate is not in the system trust store.
    const system = await rejects(testSqlConnection(f.config({ ssl: true })));
    expect(system.code).toBe('connection_failed');
    expect(system.message).toMatch(/certificate/i);
    // rejectUnauthorized false skips the check (documented as for tests only).
    expect((await testSqlConnection(f.config({ ssl: { rejectUnauthorized: false } }))).message).toBeTruthy();
    for (const e of [plain, system]) for (const s of f.secrets) expect(e.message).not.toContain(s);
  });
});
