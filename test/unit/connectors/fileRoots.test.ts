import { existsSync, promises as fs, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConfigError, SettingsReader } from '../../../lib/core/config';
import { createCustomConnector, validateCustomSettings } from '../../../lib/connectors/registry';
import { checkFileSettings } from '../../../lib/connectors/file/access';
import { parseRecord, readJsonRecords } from '../../../lib/connectors/file/jsonRecords';
import { checkFileRootsSetting, checkPath, checkPathSync, openInside, readFileRoots, type PathCheck } from '../../../lib/connectors/file/roots';
import { SnapshotStore } from '../../../lib/connectors/file/state';
import { ConnectorError, type Connector, type DeltaPage, type ImportPage } from '../../../lib/connectors/sdk';
import { AppError } from '../../../lib/core/errors';

/**
 * The file roots: the setting, the path check (real paths, `..`, link chains, files not created yet) in its
 * synchronous and asynchronous forms, the save-time settings check, and the run-time checks of a connector
 * whose files are swapped for links after it was made.
 */

let base: string;
let root: string;
let outside: string;
const SECRET = 'TOP-SECRET-CONTENT-7f3a';

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'file-roots-unit-')));
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.csv'), `id,name\ns1,${SECRET}\n`);
  process.env.Connectors__File__Roots = root;
});
afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

const env = (values: Record<string, string>) => new SettingsReader(values);

describe('Connectors:File:Roots', () => {
  test('unset: one root, <Service:DataDir>/files (relative to the working directory)', () => {
    expect(readFileRoots(env({}))).toEqual({ folders: [path.resolve('.data', 'files')], configured: false });
    expect(readFileRoots(env({ Service__DataDir: '/srv/ims' }))).toEqual({ folders: ['/srv/ims/files'], configured: false });
  });

  test('a ;-separated list or a JSON array; relative entries resolved, blanks dropped', () => {
    expect(readFileRoots(env({ Connectors__File__Roots: '/srv/hr; /srv/exports ;' })).folders).toEqual(['/srv/hr', '/srv/exports']);
    expect(readFileRoots(env({ 'Connectors:File:Roots': '["/srv/a;b", "rel/dir"]' })).folders).toEqual(['/srv/a;b', path.resolve('rel/dir')]);
  });

  test('malformed values are a ConfigError naming the setting', () => {
    for (const bad of ['[not json', '[1, 2]', ' ; ', '[]']) {
      expect(() => readFileRoots(env({ Connectors__File__Roots: bad }))).toThrow(ConfigError);
      expect(() => readFileRoots(env({ Connectors__File__Roots: bad }))).toThrow(/Connectors:File:Roots/);
    }
  });

  test('the start check refuses a configured folder that does not exist or is a file, and creates the default one', () => {
    expect(() => checkFileRootsSetting(env({ Connectors__File__Roots: path.join(base, 'nowhere') }))).toThrow(/Connectors:File:Roots.*does not exist/);
    expect(() => checkFileRootsSetting(env({ Connectors__File__Roots: path.join(outside, 'secret.csv') }))).toThrow(/not a folder/);
    expect(checkFileRootsSetting(env({ Connectors__File__Roots: root })).folders).toEqual([root]);
    const data = path.join(base, 'data');
    expect(checkFileRootsSetting(env({ Service__DataDir: data })).folders).toEqual([path.join(data, 'files')]);
    expect(existsSync(path.join(data, 'files'))).toBe(true);
  });
});

describe.each([
  ['synchronous', async (p: string, roots: string[]): Promise<PathCheck> => checkPathSync(p, roots)],
  ['asynchronous', (p: string, roots: string[]): Promise<PathCheck> => checkPath(p, roots)],
])('the path check (%s)', (_name, check) => {
  const ok = async (p: string, real = p) => expect(await check(p, [root])).toEqual({ real });
  const refused = async (p: string, problem = 'outside') => expect(await check(p, [root])).toEqual({ problem });

  test('paths inside a root pass with their real path; the root itself too; others are outside', async () => {
    mkdirSync(path.join(root, 'hr'));
    writeFileSync(path.join(root, 'hr', 'people.csv'), 'id\n');
    await ok(path.join(root, 'hr', 'people.csv'));
    await ok(root);
    await ok(root + '/', root);
    await refused('/etc');
    await refused('/etc/passwd');
    await refused(path.join(outside, 'secret.csv'));
    // A sibling whose name starts with the root's is not inside it.
    mkdirSync(root + '-evil');
    await refused(path.join(root + '-evil', 'x.csv'));
  });

  test('relative paths and . or .. segments are refused, wherever they lead', async () => {
    await refused('relative/dir', 'not_absolute');
    await refused(`${root}/../outside/secret.csv`, 'dot_segments');
    await refused(`${root}/hr/../people.csv`, 'dot_segments');
    await refused(`${root}/./people.csv`, 'dot_segments');
  });

  test('a link leaving the root is refused; a link chain is followed to its end; a link that stays inside is fine', async () => {
    symlinkSync('/etc/passwd', path.join(root, 'people.csv'));
    await refused(path.join(root, 'people.csv'));
    // root/a -> root/b -> outside/secret.csv
    symlinkSync(path.join(outside, 'secret.csv'), path.join(root, 'b'));
    symlinkSync(path.join(root, 'b'), path.join(root, 'a'));
    await refused(path.join(root, 'a'));
    // root/c -> root/d -> root/data.csv (relative links)
    writeFileSync(path.join(root, 'data.csv'), 'id\n');
    symlinkSync('data.csv', path.join(root, 'd'));
    symlinkSync('d', path.join(root, 'c'));
    await ok(path.join(root, 'c'), path.join(root, 'data.csv'));
    // A root reached through a link: paths spelled either way are inside it.
    const viaLink = path.join(base, 'root-link');
    symlinkSync(root, viaLink);
    expect(await check(path.join(viaLink, 'data.csv'), [viaLink])).toEqual({ real: path.join(root, 'data.csv') });
    expect(await check(path.join(root, 'data.csv'), [viaLink])).toEqual({ real: path.join(root, 'data.csv') });
  });

  test('a linked folder leading out is refused for what is in it and for what is not there yet', async () => {
    symlinkSync(outside, path.join(root, 'sub'));
    await refused(path.join(root, 'sub'));
    await refused(path.join(root, 'sub', 'secret.csv'));
    await refused(path.join(root, 'sub', 'new', 'state'));
  });

  test('a file not created yet: its nearest existing parent decides', async () => {
    mkdirSync(path.join(root, 'exports'));
    await ok(path.join(root, 'exports', 'export.csv'));
    await ok(path.join(root, 'a', 'b', 'c'));
    await refused(path.join(outside, 'new.csv'));
    await refused('/nonexistent-top/x');
  });

  test('a dangling link is followed to where it would lead (kernel rules for .. after a linked folder)', async () => {
    symlinkSync(path.join(outside, 'not-yet.csv'), path.join(root, 'export.csv'));
    await refused(path.join(root, 'export.csv'));
    symlinkSync(path.join(root, 'later.csv'), path.join(root, 'inside.csv'));
    await ok(path.join(root, 'inside.csv'), path.join(root, 'later.csv'));
    // root/sub -> outside/deep; root/z -> "sub/../missing": the kernel goes up from outside/deep, to outside/missing.
    mkdirSync(path.join(outside, 'deep'));
    symlinkSync(path.join(outside, 'deep'), path.join(root, 'sub'));
    symlinkSync('sub/../missing', path.join(root, 'z'));
    await refused(path.join(root, 'z'));
    await refused(path.join(root, 'z', 'more'));
  });

  test('a loop of links cannot be resolved', async () => {
    symlinkSync(path.join(root, 'loop2'), path.join(root, 'loop1'));
    symlinkSync(path.join(root, 'loop1'), path.join(root, 'loop2'));
    await refused(path.join(root, 'loop1'), 'unresolvable');
    await refused(path.join(root, 'loop1', 'x'), 'unresolvable');
  });

  test('a root that does not exist holds nothing', async () => {
    expect(await check(path.join(base, 'gone', 'x'), [path.join(base, 'gone')])).toEqual({ problem: 'outside' });
  });
});

describe('openInside', () => {
  test('opens a file inside; answers the problem for a link out, without opening it', async () => {
    writeFileSync(path.join(root, 'in.csv'), 'id\nr1\n');
    const fh = await openInside(path.join(root, 'in.csv'), [root]);
    expect(typeof fh).not.toBe('string');
    if (typeof fh !== 'string') {
      expect((await fh.readFile()).toString()).toBe('id\nr1\n');
      await fh.close();
    }
    symlinkSync(path.join(outside, 'secret.csv'), path.join(root, 'out.csv'));
    expect(await openInside(path.join(root, 'out.csv'), [root])).toBe('outside');
    await expect(openInside(path.join(root, 'missing.csv'), [root])).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('the save-time check of the settings', () => {
  test('names the field at fault: path, a file of the folder, exportFile, stateDirectory; nothing when all is inside', () => {
    const hr = path.join(root, 'hr');
    mkdirSync(hr);
    writeFileSync(path.join(hr, 'a.csv'), 'id\n');
    expect(checkFileSettings({ path: hr, anchorColumn: 'id' } as never, [root])).toEqual([]);
    expect(checkFileSettings({ path: outside, anchorColumn: 'id' } as never, [root])).toEqual([
      { path: '/path', message: expect.stringMatching(/^is outside/) },
    ]);
    symlinkSync(path.join(outside, 'secret.csv'), path.join(hr, 'people.csv'));
    const linked = checkFileSettings({ path: hr, anchorColumn: 'id' } as never, [root]);
    expect(linked).toEqual([{ path: '/path', message: expect.stringContaining("holds the file 'people.csv'") }]);
    expect(JSON.stringify(linked)).not.toContain(outside);
    // A file the pattern does not pick is not read, so not refused; a hidden one neither.
    expect(checkFileSettings({ path: hr, anchorColumn: 'id', filePattern: 'a.*' } as never, [root])).toEqual([]);
    symlinkSync(path.join(outside, 'secret.csv'), path.join(hr, 'out.json'));
    expect(checkFileSettings({ path: hr, anchorColumn: 'id', format: 'json', exportFile: 'out.json', filePattern: 'none' } as never, [root])).toEqual([
      { path: '/exportFile', message: expect.stringMatching(/^is outside/) },
    ]);
    expect(checkFileSettings({ path: hr, anchorColumn: 'id', filePattern: 'a.*', stateDirectory: path.join(outside, 'state') } as never, [root])).toEqual([
      { path: '/stateDirectory', message: expect.stringMatching(/^is outside/) },
    ]);
  });

  test('validateCustomSettings answers them as a 400 under /config/settings; making the connector fails the same way', () => {
    let err: unknown;
    try {
      validateCustomSettings({ implementation: 'file', settings: { path: '/etc', anchorColumn: 'id' } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(400);
    expect((err as AppError).extra.errors).toEqual([expect.objectContaining({ path: '/config/settings/path' })]);
    expect(() => createCustomConnector({ implementation: 'file', settings: { path: '/etc', anchorColumn: 'id' } })).toThrow(
      expect.objectContaining({ code: 'configuration_invalid', message: expect.stringContaining('/config/settings/path') }),
    );
  });
});

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

async function refusal(p: Promise<unknown>): Promise<ConnectorError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectorError);
  expect((e as ConnectorError).code).toBe('configuration_invalid');
  // Neither what the file holds nor where the link leads.
  expect((e as ConnectorError).message).not.toContain(SECRET);
  expect((e as ConnectorError).message).not.toContain(outside);
  return e as ConnectorError;
}

describe('a connector whose paths are swapped for links after it was made', () => {
  let hr: string;
  let c: Connector;
  beforeEach(async () => {
    hr = path.join(root, 'hr');
    mkdirSync(hr);
    writeFileSync(path.join(hr, 'people.csv'), 'id,name\np1,Ada\n');
    c = createCustomConnector({ implementation: 'file', settings: { path: hr, anchorColumn: 'id', stateDirectory: path.join(root, 'state') } });
  });

  const swap = async (file: string, target: string) => {
    await fs.rm(file, { recursive: true, force: true });
    await fs.symlink(target, file);
  };

  test('full import, delta import, schema and the connection test refuse a file that now leads out', async () => {
    const pages = await all<ImportPage>(c.fullImport!({ pageSize: 100 }));
    expect(pages.flatMap((p) => p.objects.map((o) => o.anchor))).toEqual(['p1']);
    const watermark = pages.at(-1)!.watermark!;
    await swap(path.join(hr, 'people.csv'), path.join(outside, 'secret.csv'));
    const e = await refusal(all(c.fullImport!({ pageSize: 100 })));
    expect(e.message).toMatch(/^path: the file 'people\.csv' of the folder is outside/);
    await refusal(all<DeltaPage>(c.deltaImport!(watermark, { pageSize: 100 })));
    await refusal(c.schema());
    await refusal(c.testConnection());
  });

  test('a full import resumed from a cursor refuses it too', async () => {
    writeFileSync(path.join(hr, 'people.csv'), 'id,name\np1,Ada\np2,Alan\np3,Grace\n');
    const c2 = createCustomConnector({ implementation: 'file', settings: { path: hr, anchorColumn: 'id', stateDirectory: path.join(root, 'state') } });
    const it = c2.fullImport!({ pageSize: 1 })[Symbol.asyncIterator]();
    const first = (await it.next()).value as ImportPage;
    await it.return?.(undefined);
    await swap(path.join(hr, 'people.csv'), path.join(outside, 'secret.csv'));
    await refusal(all(c2.fullImport!({ pageSize: 1, cursor: first.cursor! })));
  });

  test('the folder swapped for a link out is refused before it is listed', async () => {
    await swap(hr, outside);
    const e = await refusal(all(c.fullImport!({ pageSize: 100 })));
    expect(e.message).toMatch(/^path: the folder '.*' is outside/);
  });

  test('an export whose file now leads out is refused, and the file it leads to is left as it was', async () => {
    const target = path.join(outside, 'secret.csv');
    const before = readFileSync(target, 'utf8');
    await swap(path.join(hr, 'export.csv'), target);
    const e = await refusal(c.export!({ kind: 'add', objectType: 'User', anchor: 'n1', attributes: { id: 'n1', name: 'New' } }));
    expect(e.message).toMatch(/^exportFile: 'export\.csv' is outside/);
    expect(readFileSync(target, 'utf8')).toBe(before);
  });

  test('a stateDirectory swapped for a link out is refused; nothing is written there', async () => {
    await swap(path.join(root, 'state'), outside);
    const e = await refusal(all(c.fullImport!({ pageSize: 100 })));
    expect(e.message).toMatch(/^stateDirectory: '.*' is outside/);
    expect((await fs.readdir(outside)).sort()).toEqual(['secret.csv']);
  });
});

describe('run errors do not quote what a file holds', () => {
  test('a CSV header naming a column twice gives the positions, not the name', async () => {
    const hr = path.join(root, 'hr');
    mkdirSync(hr);
    writeFileSync(path.join(hr, 'people.csv'), `id,${SECRET},x,${SECRET}\n1,a,b,c\n`);
    const c = createCustomConnector({ implementation: 'file', settings: { path: hr, anchorColumn: 'id', stateDirectory: path.join(root, 'state') } });
    const e = await refusal(all(c.fullImport!({ pageSize: 100 })));
    expect(e.message).toBe('people.csv: the header names the same column twice (columns 2 and 4).');
  });

  test('invalid JSON is described without the parser quoting the record', async () => {
    async function* chunks() {
      yield Buffer.from(`{"id": 1}\n{"id": ${SECRET}}\n{"id": "${SECRET}", "v": tru}\n{"id": "a\tb"}\n`);
    }
    const errors: string[] = [];
    for await (const rec of readJsonRecords(chunks())) {
      const r = parseRecord(rec);
      if ('error' in r) errors.push(r.error);
    }
    // What V8 says of the first two: Unexpected token 'T', "{"id": TOP-SECRET-..."... is not valid JSON.
    expect(errors).toEqual(['Invalid JSON: an unexpected character.', 'Invalid JSON: an unexpected character.', 'Invalid JSON at character 10 of the record.']);
    for (const m of errors) expect(m).not.toContain(SECRET);
  });

  test("the engine's own state folder is not quoted in a state error; a configured stateDirectory is named as given", async () => {
    const blocked = path.join(root, 'blocked');
    writeFileSync(blocked, 'a file where a folder is expected');
    const engineOwned = new SnapshotStore(path.join(blocked, 'connectors', 'c1'));
    const e1 = await engineOwned.begin(engineOwned.newId()).then(
      () => undefined,
      (err: ConnectorError) => err,
    );
    expect(e1?.message).toBe("Cannot use the connector's state directory (ENOTDIR).");
    const configured = new SnapshotStore(path.join(blocked, 'x'), "stateDirectory '/srv/state'");
    const e2 = await configured.begin(configured.newId()).then(
      () => undefined,
      (err: ConnectorError) => err,
    );
    expect(e2?.message).toBe("Cannot use stateDirectory '/srv/state' (ENOTDIR).");
  });

  test('a snapshot file replaced by a link is not read through', async () => {
    const dir = path.join(root, 'snap');
    const store = new SnapshotStore(dir);
    const id = store.newId();
    await store.begin(id);
    await store.finish(id);
    await fs.rm(path.join(dir, `${id}.rows`));
    symlinkSync(path.join(outside, 'secret.csv'), path.join(dir, `${id}.rows`));
    await expect(store.load(id)).rejects.toMatchObject({ code: 'configuration_invalid', message: expect.stringContaining('symbolic link') });
  });
});
