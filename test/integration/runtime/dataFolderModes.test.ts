import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TableClient } from '@azure/data-tables';
import { Azurite } from '../../../lib/runtime/azurite';

/**
 * The embedded storage's files are the owner's alone: a real Azurite (table, queue and blob) started on a folder
 * that was made open to everyone, holding an old file readable by all, tightens both (0700/0600) and says so in
 * one line; what Azurite writes itself afterwards (a table saved to disk, blob and queue metadata) is 0600 in
 * 0700 folders, because it runs with the umask 077. Modes read back with fs.stat.
 */
jest.setTimeout(120_000);

const base = mkdtempSync(path.join(os.tmpdir(), 'azurite-modes-'));
let azurite: Azurite | undefined;
afterAll(async () => {
  await azurite?.stop();
  rmSync(base, { recursive: true, force: true });
});

/** Every path under `dir` (itself included) with its permission bits. */
function modes(dir: string): { path: string; mode: number; dir: boolean }[] {
  const out: { path: string; mode: number; dir: boolean }[] = [];
  const visit = (p: string) => {
    const st = statSync(p);
    out.push({ path: path.relative(base, p) || '.', mode: st.mode & 0o777, dir: st.isDirectory() });
    if (st.isDirectory()) for (const n of readdirSync(p)) visit(path.join(p, n));
  };
  visit(dir);
  return out;
}

test('an open folder and an old world-readable file are tightened; what Azurite writes is 0600 in 0700 folders', async () => {
  const location = path.join(base, 'azurite');
  mkdirSync(path.join(location, 'old'), { recursive: true });
  writeFileSync(path.join(location, 'old', 'leftover.json'), '{}');
  chmodSync(location, 0o755);
  chmodSync(path.join(location, 'old'), 0o777);
  chmodSync(path.join(location, 'old', 'leftover.json'), 0o644);
  const said: string[] = [];
  azurite = new Azurite({ location, onTightened: (line) => said.push(line), tableSaveMs: 100 });
  await azurite.start();
  expect(said).toEqual([`Tightened 3 file(s) and folder(s) under ${location} to the owner only (0600/0700).`]);

  const table = TableClient.fromConnectionString(azurite.connectionString, 'People', { allowInsecureConnection: true });
  await table.createTable();
  await table.createEntity({ partitionKey: 'p', rowKey: 'r', name: 'Ada' });
  // The table process saves to disk on its interval, then on stop: stop it, and everything it wrote is on disk.
  await azurite.stop();
  azurite = undefined;
  const all = modes(location);
  expect(all.filter((e) => !e.dir).length).toBeGreaterThan(1);
  const open = all.filter((e) => (e.dir ? e.mode !== 0o700 : e.mode & 0o077));
  expect(open).toEqual([]);
});
