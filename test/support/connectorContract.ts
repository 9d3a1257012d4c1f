import {
  CONNECTOR_ERROR_CODES,
  ConnectorError,
  contentHash,
  hasDeltaImport,
  hasExport,
  hasFullImport,
  type Connector,
  type ConnectorObject,
  type DeltaChange,
  type DeltaPage,
  type ExportChange,
  type ExportResult,
  type ImportPage,
} from '../../lib/connectors/sdk';

/**
 * The connector contract suite: the behaviour the sync engine relies on, run against every connector (like
 * ConnId's SyncApiOpTests). A connector's test file supplies a fixture that can seed, change and remove
 * objects in a real source (a folder, slapd, PostgreSQL...) and map what the connector reads back to the
 * neutral {@link ContractPerson} shape; this module defines the cases.
 *
 *   connectorContract({ name: 'file (csv)', capabilities: {...}, makeFixture: async () => new CsvFixture() });
 */

/** A person as the suite thinks of it; the fixture maps it to its source's attributes. */
export interface ContractPerson {
  /** The natural key (employee id, uid): stable, unique. */
  key: string;
  givenName: string;
  sn: string;
  mail?: string;
  /** A multi-valued attribute. */
  proxyAddresses?: string[];
  /** The key of this person's manager: a reference attribute. */
  manager?: string;
  /** Where the object lives (OU, department column); a change of it is a rename. */
  container?: string;
}

/** What the fixture reads back from a connector object. */
export interface ContractReading {
  key: string;
  givenName?: string | null;
  sn?: string | null;
  mail?: string | null;
  proxyAddresses: string[];
  /** The manager's key, resolved from the object's `references`. */
  manager?: string;
  container?: string;
}

export interface ContractFixture {
  /** A new connector instance over the fixture's source (instances must not share state in memory). */
  connector(): Connector;
  /** A connector whose source cannot be reached (missing folder, closed port, wrong password). */
  unreachableConnector(): Connector;
  seed(people: ContractPerson[]): Promise<void>;
  update(key: string, changes: Partial<Omit<ContractPerson, 'key'>>): Promise<void>;
  remove(key: string): Promise<void>;
  /** Move an object to another container (rename); required with `capabilities.rename`. */
  move?(key: string, container: string): Promise<void>;
  /** Add one object the connector cannot read; required with `capabilities.malformed`. */
  corrupt?(): Promise<void>;
  read(o: ConnectorObject): ContractReading;
  /** Change builders for export; required with `capabilities.export`. */
  exportAdd?(p: ContractPerson): ExportChange;
  exportUpdate?(anchor: string, key: string, change: { mail?: string | null; addProxy?: string[]; removeProxy?: string[] }): ExportChange;
  exportDelete?(anchor: string, key: string): ExportChange;
  /** Secrets of the fixture's configuration: no error message may contain one. */
  secrets?: string[];
  cleanup(): Promise<void>;
}

export interface ContractOptions {
  name: string;
  makeFixture(): Promise<ContractFixture>;
  capabilities: { delta: boolean; rename: boolean; export: boolean; malformed: boolean };
}

const RUN_LEVEL = new Set(['connection_failed', 'authentication_failed', 'timeout', 'configuration_invalid']);

export const PEOPLE: ContractPerson[] = [
  {
    key: 'E001',
    givenName: 'Ada',
    sn: 'Lovelace',
    mail: 'ada@example.test',
    proxyAddresses: ['smtp:ada@example.test', 'smtp:countess@example.test'],
    container: 'Engineering',
  },
  { key: 'E002', givenName: 'José', sn: 'Muñoz', mail: 'jose@example.test', manager: 'E001', container: 'Engineering' },
  { key: 'E003', givenName: '李', sn: '小龙', mail: 'li@example.test', manager: 'E001', proxyAddresses: ['smtp:li@example.test'], container: 'Sales' },
  { key: 'E004', givenName: 'Zoë', sn: "O'Brien, Jr.", manager: 'E002', container: 'Sales' },
  { key: 'E005', givenName: 'Ängel 😀', sn: 'Ørsted "Quote"', mail: 'angel@example.test', manager: 'E002', container: 'Sales' },
];

/** Seven more people so paging has several pages. */
export const MORE_PEOPLE: ContractPerson[] = Array.from({ length: 7 }, (_, i) => ({
  key: `E1${String(i).padStart(2, '0')}`,
  givenName: `Given${i}`,
  sn: `Surname${i}`,
  mail: `p${i}@example.test`,
  manager: 'E001',
  container: i % 2 ? 'Sales' : 'Engineering',
}));

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

async function fullImport(c: Connector, pageSize = 100, cursor?: string | null): Promise<ImportPage[]> {
  if (!hasFullImport(c)) throw new Error('The connector has no full import.');
  return collect(c.fullImport({ pageSize, cursor }));
}

async function delta(c: Connector, watermark: string | null, pageSize = 100): Promise<DeltaPage[]> {
  if (!hasDeltaImport(c)) throw new Error('The connector has no delta import.');
  return collect(c.deltaImport(watermark, { pageSize }));
}

const objectsOf = (pages: ImportPage[]) => pages.flatMap((p) => p.objects);
const changesOf = (pages: DeltaPage[]) => pages.flatMap((p) => p.changes);
const watermarkOf = (pages: ImportPage[]) => pages[pages.length - 1].watermark;

function expectPerson(f: ContractFixture, o: ConnectorObject, p: ContractPerson): void {
  const r = f.read(o);
  expect(r.key).toBe(p.key);
  expect(r.givenName).toBe(p.givenName);
  expect(r.sn).toBe(p.sn);
  expect(r.mail ?? undefined).toBe(p.mail);
  expect([...r.proxyAddresses].sort()).toEqual([...(p.proxyAddresses ?? [])].sort());
  expect(r.manager).toBe(p.manager);
}

async function expectConnectorError(p: Promise<unknown>, codes: Set<string>, secrets: string[] = []): Promise<ConnectorError> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ConnectorError);
  const e = caught as ConnectorError;
  expect(codes.has(e.code)).toBe(true);
  expect(e.message.length).toBeGreaterThan(10);
  for (const s of secrets) expect(e.message).not.toContain(s);
  return e;
}

export function connectorContract(options: ContractOptions): void {
  const caps = options.capabilities;
  describe(`connector contract: ${options.name}`, () => {
    let f: ContractFixture;
    let c: Connector;
    const byKey = (objects: ConnectorObject[]) => new Map(objects.map((o) => [f.read(o).key, o]));

    beforeEach(async () => {
      f = await options.makeFixture();
      await f.seed(PEOPLE);
      c = f.connector();
    });
    afterEach(async () => {
      await c.close();
      await f.cleanup();
    });

    test('testConnection reaches the source', async () => {
      const r = await c.testConnection();
      expect(typeof r.message).toBe('string');
      expect(r.message.length).toBeGreaterThan(0);
    });

    test('schema lists the attributes, marking multi-valued and reference ones', async () => {
      const s = await c.schema();
      expect(s.objectTypes.length).toBeGreaterThan(0);
      const attrs = s.objectTypes.flatMap((t) => t.attributes);
      expect(attrs.some((a) => a.multiValued)).toBe(true);
      const ref = attrs.find((a) => a.reference);
      expect(ref?.reference?.objectType).toBeTruthy();
      expect(['anchor', 'dn', 'attribute']).toContain(ref?.reference?.resolveBy);
    });

    test('full import returns every object with its attributes, multi-valued values and references', async () => {
      const pages = await fullImport(c);
      expect(pages[pages.length - 1].cursor).toBeNull();
      const objects = objectsOf(pages);
      expect(pages.flatMap((p) => p.errors)).toEqual([]);
      expect(objects).toHaveLength(PEOPLE.length);
      const got = byKey(objects);
      for (const p of PEOPLE) expectPerson(f, got.get(p.key)!, p);
      expect(new Set(objects.map((o) => o.anchor)).size).toBe(PEOPLE.length);
      for (const o of objects) expect(typeof o.objectType).toBe('string');
    });

    test('full import pages hold at most pageSize objects and every page but the last has a cursor', async () => {
      await f.seed([...PEOPLE, ...MORE_PEOPLE]);
      const pages = await fullImport(c, 3);
      expect(pages.length).toBeGreaterThanOrEqual(4);
      for (const p of pages) expect(p.objects.length + p.errors.length).toBeLessThanOrEqual(3);
      pages.slice(0, -1).forEach((p) => expect(typeof p.cursor).toBe('string'));
      expect(pages[pages.length - 1].cursor).toBeNull();
      expect(objectsOf(pages)).toHaveLength(PEOPLE.length + MORE_PEOPLE.length);
    });

    test('a full import resumes from a page cursor with a new connector instance: nothing lost, nothing twice', async () => {
      const all = [...PEOPLE, ...MORE_PEOPLE];
      await f.seed(all);
      const first: ImportPage[] = [];
      if (!hasFullImport(c)) throw new Error('no full import');
      for await (const page of c.fullImport({ pageSize: 4 })) {
        first.push(page);
        if (first.length === 2) break; // the engine "crashed" after committing page 2
      }
      const resumed = f.connector();
      try {
        const rest = await fullImport(resumed, 4, first[1].cursor);
        const keys = [...objectsOf(first), ...objectsOf(rest)].map((o) => f.read(o).key);
        expect(keys.sort()).toEqual(all.map((p) => p.key).sort());
        expect(watermarkOf(rest)).toBeTruthy();
        // The watermark of the resumed import is a good delta baseline: nothing changed since.
        expect(changesOf(await delta(resumed, watermarkOf(rest)!))).toEqual([]);
      } finally {
        await resumed.close();
      }
    });

    test('a full import stops between pages when its signal is aborted', async () => {
      await f.seed([...PEOPLE, ...MORE_PEOPLE]);
      if (!hasFullImport(c)) throw new Error('no full import');
      const ac = new AbortController();
      const seen: ImportPage[] = [];
      const run = (async () => {
        for await (const page of c.fullImport({ pageSize: 2, signal: ac.signal })) {
          seen.push(page);
          ac.abort();
        }
      })();
      const e = await expectConnectorError(run, new Set(['aborted']));
      expect(e.retriable).toBe(false);
      expect(seen).toHaveLength(1);
    });

    test('two full imports of unchanged data give the same anchors and content hashes', async () => {
      const a = objectsOf(await fullImport(c));
      const b = objectsOf(await fullImport(f.connector()));
      const hashes = (os: ConnectorObject[]) => new Map(os.map((o) => [o.anchor, contentHash(o)]));
      expect(hashes(b)).toEqual(hashes(a));
    });

    test('an unreachable source fails testConnection and full import with a run-level error, no secret in it', async () => {
      const bad = f.unreachableConnector();
      try {
        await expectConnectorError(bad.testConnection(), RUN_LEVEL, f.secrets);
        await expectConnectorError(fullImport(bad), RUN_LEVEL, f.secrets);
      } finally {
        await bad.close();
      }
    });

    if (caps.malformed) {
      test('an unreadable object is a per-object error, not a failed import', async () => {
        await f.corrupt!();
        const pages = await fullImport(c);
        const errors = pages.flatMap((p) => p.errors);
        expect(errors.length).toBeGreaterThanOrEqual(1);
        for (const e of errors) {
          expect(CONNECTOR_ERROR_CODES).toContain(e.code);
          expect(RUN_LEVEL.has(e.code)).toBe(false);
          expect(e.message.length).toBeGreaterThan(5);
        }
        const keys = objectsOf(pages).map((o) => f.read(o).key);
        for (const p of PEOPLE) expect(keys).toContain(p.key);
      });
    }

    if (caps.delta) {
      describe('delta import', () => {
        test('without a watermark it asks for a full import', async () => {
          const pages = await delta(c, null);
          expect(pages[0].fullImportRequired?.reason).toEqual(expect.any(String));
          expect(changesOf(pages)).toEqual([]);
        });

        test('nothing changed: no changes, and a watermark to go on from', async () => {
          const wm = watermarkOf(await fullImport(c));
          expect(typeof wm).toBe('string');
          const pages = await delta(c, wm!);
          expect(changesOf(pages)).toEqual([]);
          expect(pages.flatMap((p) => p.errors)).toEqual([]);
          expect(typeof pages[pages.length - 1].nextWatermark).toBe('string');
        });

        test('adds, updates and deletes are reported once, typed, with the current object', async () => {
          const fp = await fullImport(c);
          const anchors = new Map(objectsOf(fp).map((o) => [f.read(o).key, o.anchor]));
          const wm = watermarkOf(fp)!;
          const newcomer: ContractPerson = { key: 'E900', givenName: 'Новый', sn: 'Сотрудник', mail: 'new@example.test', manager: 'E003', container: 'Sales' };
          await f.seed([...PEOPLE, newcomer]);
          await f.update('E002', { mail: 'jose.munoz@example.test', proxyAddresses: ['smtp:jm@example.test'] });
          await f.remove('E004');
          // E005's manager changes: a reference update.
          await f.update('E005', { manager: 'E003' });

          const pages = await delta(c, wm, 2);
          for (const p of pages) expect(p.changes.length + p.errors.length).toBeLessThanOrEqual(2);
          const changes = changesOf(pages);
          const kinds = (k: DeltaChange['kind']) => changes.filter((ch) => ch.kind === k);
          expect(kinds('add')).toHaveLength(1);
          expectPerson(f, kinds('add')[0].object!, newcomer);
          expect(
            kinds('update')
              .map((ch) => ch.anchor)
              .sort(),
          ).toEqual([anchors.get('E002'), anchors.get('E005')].sort());
          const e002 = kinds('update').find((ch) => ch.anchor === anchors.get('E002'))!;
          expect(f.read(e002.object!).mail).toBe('jose.munoz@example.test');
          expect(f.read(e002.object!).proxyAddresses).toEqual(['smtp:jm@example.test']);
          const e005 = kinds('update').find((ch) => ch.anchor === anchors.get('E005'))!;
          expect(f.read(e005.object!).manager).toBe('E003');
          expect(kinds('delete').map((ch) => ch.anchor)).toEqual([anchors.get('E004')]);
          expect(changes).toHaveLength(4);

          const next = pages[pages.length - 1].nextWatermark!;
          expect(changesOf(await delta(c, next))).toEqual([]);
        });

        test('a delta run again from the same watermark (not committed) reports the same changes', async () => {
          const wm = watermarkOf(await fullImport(c))!;
          await f.update('E003', { sn: 'Lee' });
          const once = changesOf(await delta(c, wm));
          const again = changesOf(await delta(f.connector(), wm));
          expect(once.map((ch) => [ch.kind, ch.anchor])).toEqual(again.map((ch) => [ch.kind, ch.anchor]));
          expect(once).toHaveLength(1);
        });

        if (caps.rename) {
          test('a move to another container is a rename carrying where the object was', async () => {
            const wm = watermarkOf(await fullImport(c))!;
            await f.move!('E003', 'Engineering');
            const changes = changesOf(await delta(c, wm));
            expect(changes).toHaveLength(1);
            expect(changes[0].kind).toBe('rename');
            expect(changes[0].previousContainer ?? changes[0].previousDn).toBeTruthy();
            expect(f.read(changes[0].object!).container).toBe('Engineering');
          });
        }
      });
    }

    if (caps.export) {
      describe('export', () => {
        const exportAll = async (changes: ExportChange[]): Promise<ExportResult[]> => {
          if (!hasExport(c)) throw new Error('no export');
          const out: ExportResult[] = [];
          for (const ch of changes) out.push(await c.export(ch));
          return out;
        };

        test('add, update and delete, confirmed by the next import', async () => {
          const before = byKey(objectsOf(await fullImport(c)));
          const added: ContractPerson = {
            key: 'E777',
            givenName: 'Émile',
            sn: 'Zola',
            mail: 'emile@example.test',
            proxyAddresses: ['smtp:emile@example.test'],
            manager: 'E001',
            container: 'Sales',
          };
          const results = await exportAll([
            f.exportAdd!(added),
            f.exportUpdate!(before.get('E002')!.anchor, 'E002', { mail: 'jm2@example.test' }),
            f.exportUpdate!(before.get('E001')!.anchor, 'E001', { addProxy: ['smtp:lovelace@example.test'], removeProxy: ['smtp:countess@example.test'] }),
            f.exportDelete!(before.get('E004')!.anchor, 'E004'),
          ]);
          for (const r of results) expect(r.status).toBe('success');
          const after = byKey(objectsOf(await fullImport(f.connector())));
          expect(after.has('E004')).toBe(false);
          expectPerson(f, after.get('E777')!, added);
          expect(results[0].anchor).toBe(after.get('E777')!.anchor);
          expect(f.read(after.get('E002')!).mail).toBe('jm2@example.test');
          expect(f.read(after.get('E001')!).proxyAddresses.sort()).toEqual(['smtp:ada@example.test', 'smtp:lovelace@example.test']);
          expect(after.size).toBe(PEOPLE.length);
        });

        test('a change to an object that does not exist is a per-object error; deleting one that is gone succeeds', async () => {
          const [upd, del] = await exportAll([
            f.exportUpdate!('no-such-anchor', 'E999', { mail: 'x@example.test' }),
            f.exportDelete!('no-such-anchor', 'E999'),
          ]);
          expect(upd.status).toBe('error');
          if (upd.status === 'error') expect(['not_found', 'object_error']).toContain(upd.error.code);
          expect(del.status).toBe('success');
          expect(objectsOf(await fullImport(c))).toHaveLength(PEOPLE.length);
        });

        test('an add whose object exists answers already_exists with `existing`, which an update by its anchor takes over', async () => {
          const before = byKey(objectsOf(await fullImport(c)));
          const held = before.get('E002')!;
          const p = PEOPLE.find((x) => x.key === 'E002')!;
          // The same key (and DN) with other values: not a replay of the same add.
          const [r] = await exportAll([f.exportAdd!({ ...p, givenName: 'Other', mail: 'other@example.test' })]);
          expect(r.status).toBe('error');
          if (r.status !== 'error') return;
          expect(r.error.code).toBe('already_exists');
          expect(r.existing).toBeDefined();
          expect(r.existing!.anchor).toBe(held.anchor);
          if (held.dn !== undefined) expect(r.existing!.dn).toBe(held.dn);
          // The values of the object there, not the refused add's.
          const seen = f.read({ anchor: r.existing!.anchor, objectType: held.objectType, attributes: r.existing!.attributes });
          expect(seen.key).toBe('E002');
          expect(seen.givenName).toBe(p.givenName);
          expect(seen.mail).toBe(p.mail);
          const [taken] = await exportAll([f.exportUpdate!(r.existing!.anchor, 'E002', { mail: 'taken@example.test' })]);
          expect(taken.status).toBe('success');
          const after = byKey(objectsOf(await fullImport(f.connector())));
          expect(after.get('E002')!.anchor).toBe(held.anchor);
          expect(f.read(after.get('E002')!).mail).toBe('taken@example.test');
          expect(f.read(after.get('E002')!).givenName).toBe(p.givenName);
          expect(after.size).toBe(PEOPLE.length);
        });

        test('an add replayed after it landed does not create a second object', async () => {
          const p: ContractPerson = { key: 'E778', givenName: 'Once', sn: 'Only' };
          const [first] = await exportAll([f.exportAdd!(p)]);
          const [second] = await exportAll([f.exportAdd!(p)]);
          expect(first.status).toBe('success');
          expect(['success', 'error']).toContain(second.status);
          const keys = objectsOf(await fullImport(c)).map((o) => f.read(o).key);
          expect(keys.filter((k) => k === 'E778')).toHaveLength(1);
        });
      });
    }
  });
}
