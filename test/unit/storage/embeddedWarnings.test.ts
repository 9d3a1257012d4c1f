import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { embeddedStorageWarnings } from '../../../lib/storage/health';

describe('embeddedStorageWarnings (GET /health)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'embedded-warn-'));
  const file = path.join(dir, 'azurite-table-stats.json');
  const saved = process.env.Storage__AzuriteStatsFile;
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    if (saved === undefined) delete process.env.Storage__AzuriteStatsFile;
    else process.env.Storage__AzuriteStatsFile = saved;
  });
  const now = Date.parse('2026-01-01T12:00:00Z');

  it("reads the stats file's warnings while it is fresh; nothing when unset, stale, missing or unreadable", () => {
    delete process.env.Storage__AzuriteStatsFile;
    expect(embeddedStorageWarnings(now)).toEqual([]);
    process.env.Storage__AzuriteStatsFile = file;
    expect(embeddedStorageWarnings(now)).toEqual([]);
    writeFileSync(file, JSON.stringify({ updatedAt: '2026-01-01T11:59:50Z', warnings: ['near the limit', 7] }));
    expect(embeddedStorageWarnings(now)).toEqual(['near the limit']);
    writeFileSync(file, JSON.stringify({ updatedAt: '2026-01-01T11:50:00Z', warnings: ['old news'] }));
    expect(embeddedStorageWarnings(now)).toEqual([]);
    writeFileSync(file, '{not json');
    expect(embeddedStorageWarnings(now)).toEqual([]);
  });
});
