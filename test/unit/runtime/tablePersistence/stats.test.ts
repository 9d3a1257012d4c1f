import { embeddedAzuriteLimits } from '../../../../lib/runtime/tablePersistence/embedded';
import { defaultDataWarnMB, defaultHeapMB, storageWarnings } from '../../../../lib/runtime/tablePersistence/stats';
import { RuntimeConfigError } from '../../../../lib/runtime/settings';

const MB = 1024 * 1024;

describe('embedded storage limits and warnings', () => {
  it('defaults the heap limit to half the memory (at least 1 GB) and the data warning to a third of it', () => {
    expect(defaultHeapMB(16 * 1024 * MB)).toBe(8192);
    expect(defaultHeapMB(1024 * MB)).toBe(1024);
    expect(defaultDataWarnMB(8192)).toBe(2730);
    expect(embeddedAzuriteLimits({}, 16 * 1024 * MB)).toEqual({
      maxHeapMB: 8192,
      heapWarnPercent: 70,
      dataWarnMB: 2730,
      tableSaveMs: 5000,
      backgroundLoadMB: 64,
    });
  });

  it('reads the settings (either spelling) and refuses a bad value naming the setting', () => {
    expect(
      embeddedAzuriteLimits({ Storage__AzuriteMaxHeapMB: '4000', 'Storage:AzuriteHeapWarnPercent': '50', Storage__AzuriteDataWarnMB: '10' }, 16 * 1024 * MB),
    ).toEqual({ maxHeapMB: 4000, heapWarnPercent: 50, dataWarnMB: 10, tableSaveMs: 5000, backgroundLoadMB: 64 });
    expect(() => embeddedAzuriteLimits({ Storage__AzuriteMaxHeapMB: 'lots' })).toThrow(RuntimeConfigError);
    expect(() => embeddedAzuriteLimits({ Storage__AzuriteHeapWarnPercent: '150' })).toThrow(/Storage:AzuriteHeapWarnPercent must be/);
    // The size above which a table loads in the background: 0 turns it off.
    expect(embeddedAzuriteLimits({ Storage__AzuriteBackgroundLoadMB: '0' }).backgroundLoadMB).toBe(0);
    expect(embeddedAzuriteLimits({ Storage__AzuriteBackgroundLoadMB: '256' }).backgroundLoadMB).toBe(256);
    expect(() => embeddedAzuriteLimits({ Storage__AzuriteBackgroundLoadMB: '-1' })).toThrow(/Storage:AzuriteBackgroundLoadMB must be/);
    expect(() => embeddedAzuriteLimits({ Storage__AzuriteBackgroundLoadMB: 'big' })).toThrow(/Storage:AzuriteBackgroundLoadMB must be/);
  });

  it('warns while large tables are still loading in the background', () => {
    const t = { heapPercent: 70, dataBytes: 1000 * MB };
    const w = storageWarnings({ heapUsedBytes: 1, heapLimitBytes: 100 * MB, dataBytes: 1, loading: { tables: 3, bytes: 300 * MB } }, t);
    expect(w).toEqual([expect.stringMatching(/still loading 3 large table\(s\) \(300 MB\) in the background: requests for them wait/)]);
  });

  it('warns on the heap share, the data size and a failed save; nothing below the thresholds', () => {
    const t = { heapPercent: 70, dataBytes: 100 * MB };
    expect(storageWarnings({ heapUsedBytes: 69 * MB, heapLimitBytes: 100 * MB, dataBytes: 99 * MB }, t)).toEqual([]);
    const w = storageWarnings(
      { heapUsedBytes: 71 * MB, heapLimitBytes: 100 * MB, dataBytes: 120 * MB, lastSaveError: { at: '2026-01-01T00:00:00Z', message: 'ENOSPC' } },
      t,
    );
    expect(w).toHaveLength(3);
    expect(w[0]).toMatch(/uses 71% of its heap limit \(71 MB of 100 MB; warning at 70%\).*Storage:AzuriteMaxHeapMB/);
    expect(w[1]).toMatch(/holds 120 MB on disk \(warning at 100 MB\)/);
    expect(w[2]).toMatch(/could not save its data .*ENOSPC/);
  });
});
