import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startService, type ServiceUnderTest } from '../../support/service';
import { meshByAnchor, rule, waitRun } from '../sync/syncSupport';

/**
 * The file connector works only under its roots (`Connectors__File__Roots`), over HTTP against the service on
 * Azurite. The service is given one root, a temporary folder; beside it is a folder outside every root. The
 * host's /etc/passwd is the file an attacker wants: read with a tab delimiter and its first line as the
 * anchor column, each of its lines would be a mesh object a Viewer can list.
 */
jest.setTimeout(180_000);

const base = mkdtempSync(path.join(os.tmpdir(), 'ims-file-roots-'));
const root = path.join(base, 'root');
const outside = path.join(base, 'outside');
mkdirSync(root);
mkdirSync(outside);

const PASSWD = '/etc/passwd';
const passwdLines = readFileSync(PASSWD, 'utf8')
  .split('\n')
  .filter((l) => l !== '');
/** The settings that read /etc/passwd line by line: no tab in it, so a line is one field named by the first. */
const passwdShaped = { delimiter: '\t', anchorColumn: passwdLines[0] };

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService({ env: { Connectors__File__Roots: root } });
});
afterAll(async () => {
  await rt?.dispose();
  rmSync(base, { recursive: true, force: true });
});

const fileConnectorBody = (name: string, settings: Record<string, unknown>) => ({
  name,
  type: 'custom',
  config: { implementation: 'file', objectType: 'User', settings },
});

/** No line of /etc/passwd after the first (the first is the column name the settings hold) and not its path. */
function expectNoPasswd(text: string): void {
  for (const line of passwdLines.slice(1)) expect(text).not.toContain(line);
  expect(text).not.toContain(PASSWD);
}

function folderIn(parent: string, name: string): string {
  const dir = path.join(parent, name);
  mkdirSync(dir);
  return dir;
}

describe('create and update: every path inside a root, links resolved', () => {
  test('a connector on /etc, on a link to it, or reaching out with .. is a 400 naming config.settings.path; nothing is saved', async () => {
    const link = path.join(root, 'etc-link');
    symlinkSync('/etc', link);
    const attempts = ['/etc', link, `${root}/../outside`, `${root}/./hr`];
    for (const p of attempts) {
      const res = await rt.call('POST', 'connectors', {
        body: fileConnectorBody(`Etc ${attempts.indexOf(p)}`, { path: p, filePattern: 'passwd', ...passwdShaped }),
      });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: '/config/settings/path' })]);
      expectNoPasswd(res.text);
    }
    const list = await rt.call('GET', 'connectors');
    expect(list.body.connectors.filter((c: { name: string }) => c.name.startsWith('Etc '))).toEqual([]);
  });

  test('a folder under the root whose people.csv links to /etc/passwd is refused at create, without saying where the link leads', async () => {
    const hr = folderIn(root, 'hr-linked');
    symlinkSync(PASSWD, path.join(hr, 'people.csv'));
    const res = await rt.call('POST', 'connectors', { body: fileConnectorBody('Linked people', { path: hr, ...passwdShaped }) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: '/config/settings/path', message: expect.stringContaining("'people.csv'") }]);
    expectNoPasswd(res.text);
  });

  test('exportFile or stateDirectory outside the roots is a 400 naming the field', async () => {
    const exp = folderIn(root, 'export-linked');
    writeFileSync(path.join(outside, 'target.csv'), 'id\n');
    symlinkSync(path.join(outside, 'target.csv'), path.join(exp, 'export.csv'));
    const badExport = await rt.call('POST', 'connectors', {
      body: fileConnectorBody('Export out', { path: exp, anchorColumn: 'id', exportFile: 'export.csv' }),
    });
    expect(badExport.status).toBe(400);
    expect(badExport.body.errors).toEqual([expect.objectContaining({ path: '/config/settings/exportFile' })]);
    expect(badExport.text).not.toContain(outside);

    const hr = folderIn(root, 'hr-state');
    for (const stateDirectory of [path.join(outside, 'state'), '/etc/ims-state', `${root}/../outside`]) {
      const res = await rt.call('POST', 'connectors', { body: fileConnectorBody('State out', { path: hr, anchorColumn: 'id', stateDirectory }) });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: '/config/settings/stateDirectory' })]);
    }
    // The same settings with the state under the root are fine.
    const ok = await rt.call('POST', 'connectors', {
      body: fileConnectorBody('State in', { path: hr, anchorColumn: 'id', stateDirectory: path.join(root, 'state') }),
    });
    expect(ok.status).toBe(201);
  });
});

describe('runs', () => {
  test('an import under the root works end to end (a Viewer lists its rows); moving that connector to /etc is a 400 and changes nothing', async () => {
    const hr = folderIn(root, 'hr-ok');
    writeFileSync(path.join(hr, 'people.csv'), 'id,name\nok-1,Ada\nok-2,Alan\n');
    const created = await rt.call('POST', 'connectors', { body: fileConnectorBody('HR ok', { path: hr, anchorColumn: 'id' }) });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'id', objectType: 'User' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: 'name', targetAttribute: 'name', confidence: 50 });
    const start = await rt.call('POST', `connectors/${id}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
    expect(start.status).toBe(202);
    const run = await waitRun(rt, start.body.runId);
    expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
    const seen = await eventually(async () => {
      const res = await rt.call('GET', 'mesh/objects?objectType=User&take=200&search=ok-', { role: 'Viewer' });
      expect(res.status).toBe(200);
      expect(res.body.items.map((i: { anchorValue: string }) => i.anchorValue).sort()).toEqual(['ok-1', 'ok-2']);
      return res.body;
    });
    expect(seen.totalCount).toBe(2);

    const moved = await rt.call('PUT', `connectors/${id}`, { body: fileConnectorBody('HR ok', { path: '/etc', filePattern: 'passwd', ...passwdShaped }) });
    expect(moved.status).toBe(400);
    expect(moved.body.errors).toEqual([expect.objectContaining({ path: '/config/settings/path' })]);
    const stored = await rt.call('GET', `connectors/${id}`);
    expect(stored.body.config.settings.path).toBe(hr);
  });

  test('people.csv swapped for a link to /etc/passwd after the save: the import fails, and no line of it reaches the mesh or the run (as a Viewer sees them)', async () => {
    const hr = folderIn(root, 'hr-swapped');
    const legit = 'legit:x:1000:1000:Legit:/home/legit:/bin/sh';
    writeFileSync(path.join(hr, 'people.csv'), `${passwdLines[0]}\n${legit}\n`);
    const created = await rt.call('POST', 'connectors', { body: fileConnectorBody('HR swapped', { path: hr, ...passwdShaped }) });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: passwdLines[0], objectType: 'User' });
    const importAs = async (): Promise<string> => {
      const res = await rt.call('POST', `connectors/${id}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
      expect(res.status).toBe(202);
      await waitRun(rt, res.body.runId);
      return res.body.runId as string;
    };
    const first = await rt.call('GET', `runs/${await importAs()}`, { role: 'Viewer' });
    expect(first.body).toMatchObject({ status: 'Completed', stats: { objectsCreated: 1 } });
    expect((await meshByAnchor()).has(legit)).toBe(true);

    // The file is swapped for a link (the link written beside it, then renamed over it, as an attacker would).
    symlinkSync(PASSWD, path.join(hr, '.swap'));
    renameSync(path.join(hr, '.swap'), path.join(hr, 'people.csv'));
    const runId = await importAs();
    const run = await rt.call('GET', `runs/${runId}`, { role: 'Viewer' });
    expect(run.status).toBe(200);
    expect(run.body.status).toBe('Failed');
    expect(run.body.error).toMatch(/people\.csv/);
    expect(run.body.error).toMatch(/Connectors__File__Roots/);
    expectNoPasswd(run.text);
    const runs = await rt.call('GET', `runs?connectorId=${id}`, { role: 'Viewer' });
    expectNoPasswd(runs.text);

    const mesh = await meshByAnchor();
    for (const line of passwdLines.slice(1)) expect(mesh.has(line)).toBe(false);
    expect(mesh.has(legit)).toBe(true);
    const listed = await rt.call('GET', 'mesh/objects?objectType=User&take=200', { role: 'Viewer' });
    expect(listed.status).toBe(200);
    expectNoPasswd(listed.text);
  });

  test('the folder itself swapped for a link to /etc after the save: the import fails without reading it', async () => {
    const hr = folderIn(root, 'hr-folder-swapped');
    writeFileSync(path.join(hr, 'passwd'), `${passwdLines[0]}\nlegit-folder:x:1001:1001::/home/l:/bin/sh\n`);
    const created = await rt.call('POST', 'connectors', { body: fileConnectorBody('HR folder swapped', { path: hr, filePattern: 'passwd', ...passwdShaped }) });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: passwdLines[0], objectType: 'User' });
    rmSync(hr, { recursive: true });
    symlinkSync('/etc', hr);
    const res = await rt.call('POST', `connectors/${id}/import`, { role: 'Operator', body: { runType: 'FullImport' } });
    expect(res.status).toBe(202);
    await waitRun(rt, res.body.runId);
    const run = await rt.call('GET', `runs/${res.body.runId}`, { role: 'Viewer' });
    expect(run.body.status).toBe('Failed');
    expect(run.body.error).toMatch(/\/config\/settings\/path/);
    expectNoPasswd(run.text);
    const mesh = await meshByAnchor();
    for (const line of passwdLines.slice(1)) expect(mesh.has(line)).toBe(false);
  });
});

async function eventually<T>(check: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
