import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startService, type ServiceUnderTest } from '../../support/service';

/**
 * A user-supplied pattern must not stall the service: the file connector's `filePattern` is matched without a
 * regular expression, in at most name length x pattern length steps. Before, `*?*?*?*?*?*?*?*?#` backtracked
 * for ~12 s on a 22-character file name on the event loop; the folder here holds a 200-character one, which
 * would have taken longer than this suite runs. The service answers GET /health while it checks the folder,
 * and a pattern with more than 8 `*` is refused at save (400 naming the setting), nothing saved.
 */
jest.setTimeout(120_000);

const root = mkdtempSync(path.join(os.tmpdir(), 'ims-patterns-'));
const folder = path.join(root, 'hr');
mkdirSync(folder);
writeFileSync(path.join(folder, `${'a'.repeat(200)}.txt`), 'id\n1\n');
writeFileSync(path.join(folder, 'people.csv'), 'id\n1\n');

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService({ env: { Connectors__File__Roots: root } });
});
afterAll(async () => {
  await rt?.dispose();
  rmSync(root, { recursive: true, force: true });
});

const body = (name: string, filePattern: string) => ({
  name,
  type: 'custom',
  config: { implementation: 'file', objectType: 'User', settings: { path: folder, anchorColumn: 'id', filePattern } },
});

test('the pattern that stalled the event loop is saved at once, and GET /health answers while the folder is checked', async () => {
  const order: string[] = [];
  const create = rt.call('POST', 'connectors', { body: body('Backtracking pattern', '*?*?*?*?*?*?*?*?#') }).then((r) => {
    order.push('create');
    return r;
  });
  const health = rt.call('GET', 'health', { role: null }).then((r) => {
    order.push('health');
    return r;
  });
  const [created, healthy] = await Promise.all([create, health]);
  expect(healthy.status).toBe(200);
  expect(created.status).toBe(201);
  expect(order.sort()).toEqual(['create', 'health']);
  const stored = await rt.call('GET', `connectors/${created.body.id}`);
  expect(stored.body.config.settings.filePattern).toBe('*?*?*?*?*?*?*?*?#');
});

test("more than 8 '*' in filePattern: 400 naming config.settings.filePattern, nothing saved", async () => {
  const res = await rt.call('POST', 'connectors', { body: body('Too many stars', '*a*a*a*a*a*a*a*a*a*a#') });
  expect(res.status).toBe(400);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body.errors).toEqual([{ path: '/config/settings/filePattern', message: "has 10 '*' wildcards; at most 8 are allowed." }]);
  const list = await rt.call('GET', 'connectors');
  expect(JSON.stringify(list.body)).not.toContain('Too many stars');
});
