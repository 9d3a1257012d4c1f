import {
  ConfigError,
  readExportMaxAttempts,
  readFeedExportRetentionDays,
  readFeedRetentionMinutes,
  readFeedTrimSeconds,
  readHistoryRetentionDays,
  readLeaverRetentionDays,
  readReadModelSnapshot,
  readReadModelSnapshotIdleSeconds,
  readTombstonePurgeSeconds,
  readTombstoneRetentionDays,
  SettingsReader,
} from '../../../lib/core/config';
import { readPlanSettings } from '../../../lib/plans/settings';

describe('SettingsReader', () => {
  const env = {
    Authentication__Jwt__Enabled: 'true',
    'Service:Roles:Admin': 'Service.Admin',
    engine__heartbeatseconds: '15',
    Empty: '',
    Bad__Int: '12x',
  };
  const s = new SettingsReader(env);

  it('reads colon and double-underscore spellings, case-insensitively', () => {
    expect(s.bool('Authentication:Jwt:Enabled', false)).toBe(true);
    expect(s.string('Service__Roles__Admin')).toBe('Service.Admin');
    expect(s.int('Engine:HeartbeatSeconds', 30)).toBe(15);
  });

  it('treats empty values as unset and applies defaults', () => {
    expect(s.string('Empty', 'fallback')).toBe('fallback');
    expect(s.raw('Missing:Key')).toBeUndefined();
  });

  it('names the exact setting in errors', () => {
    expect(() => s.int('Bad:Int', 1)).toThrow(ConfigError);
    expect(() => s.int('Bad:Int', 1)).toThrow("Configuration error in setting 'Bad:Int': must be a whole number, not '12x'.");
    expect(() => s.requiredString('Authentication:Jwt:Authority', 'when Authentication:Jwt:Enabled is true')).toThrow(/'Authentication:Jwt:Authority'/);
    expect(() => new SettingsReader({ X: 'maybe' }).bool('X', false)).toThrow(/must be true or false/);
    expect(() => new SettingsReader({ X: '5' }).int('X', 1, { max: 3 })).toThrow(/at most 3/);
  });

  it('lists a section', () => {
    expect(new SettingsReader({ License__Edition: 'Enterprise', License__LicensedTo: 'Contoso', Other: 'x' }).section('License')).toEqual({
      Edition: 'Enterprise',
      LicensedTo: 'Contoso',
    });
  });
});

describe('Export:MaxAttempts', () => {
  const read = (env: Record<string, string>) => readExportMaxAttempts(new SettingsReader(env));

  it('defaults to 5 and reads either spelling', () => {
    expect(read({})).toBe(5);
    expect(read({ Export__MaxAttempts: '2' })).toBe(2);
    expect(read({ 'Export:MaxAttempts': '1000' })).toBe(1000);
  });

  it.each(['0', '-1', '1001', '2.5', 'five'])('refuses %s with a message naming the setting', (v) => {
    expect(() => read({ Export__MaxAttempts: v })).toThrow(ConfigError);
    expect(() => read({ Export__MaxAttempts: v })).toThrow(/setting 'Export:MaxAttempts'/);
  });
});

describe('Mesh:HistoryRetentionDays', () => {
  const read = (env: Record<string, string>) => readHistoryRetentionDays(new SettingsReader(env));
  it('defaults to 90 and reads either spelling', () => {
    expect(read({})).toBe(90);
    expect(read({ Mesh__HistoryRetentionDays: '7' })).toBe(7);
    expect(read({ 'Mesh:HistoryRetentionDays': '365' })).toBe(365);
  });
  it.each(['0', '-1', '2.5', 'ninety'])('refuses %s with a message naming the setting', (v) => {
    expect(() => read({ Mesh__HistoryRetentionDays: v })).toThrow(/HistoryRetentionDays/);
  });
});

describe('Leavers:RetentionDays', () => {
  const read = (env: Record<string, string>) => readLeaverRetentionDays(new SettingsReader(env));
  it('defaults to 365 and reads either spelling', () => {
    expect(read({})).toBe(365);
    expect(read({ Leavers__RetentionDays: '30' })).toBe(30);
    expect(read({ 'Leavers:RetentionDays': '730' })).toBe(730);
  });
  it.each(['0', '-1', '2.5', '36501', 'a year'])('refuses %s with a message naming the setting', (v) => {
    expect(() => read({ Leavers__RetentionDays: v })).toThrow(/Leavers:RetentionDays/);
  });
});

describe('Mesh:ReadModelSnapshot', () => {
  const read = (env: Record<string, string>) => readReadModelSnapshot(new SettingsReader(env));
  it('defaults to on and reads either spelling', () => {
    expect(read({})).toBe(true);
    expect(read({ Mesh__ReadModelSnapshot: 'false' })).toBe(false);
    expect(read({ 'Mesh:ReadModelSnapshot': 'true' })).toBe(true);
  });
  it('refuses a value that is not true or false with a message naming the setting', () => {
    expect(() => read({ Mesh__ReadModelSnapshot: 'sometimes' })).toThrow(/ReadModelSnapshot/);
  });
  it('waits 60 quiet seconds by default, 1 to 86400', () => {
    const idle = (env: Record<string, string>) => readReadModelSnapshotIdleSeconds(new SettingsReader(env));
    expect(idle({})).toBe(60);
    expect(idle({ Mesh__ReadModelSnapshotIdleSeconds: '1' })).toBe(1);
    for (const v of ['0', '86401', 'soon']) expect(() => idle({ Mesh__ReadModelSnapshotIdleSeconds: v })).toThrow(/ReadModelSnapshotIdleSeconds/);
  });
});

describe('Mesh:TombstoneRetentionDays and Mesh:TombstonePurgeSeconds', () => {
  const read = (env: Record<string, string>) => readTombstoneRetentionDays(new SettingsReader(env));
  it('defaults to 30 days and takes fractions', () => {
    expect(read({})).toBe(30);
    expect(read({ Mesh__TombstoneRetentionDays: '7' })).toBe(7);
    expect(read({ 'Mesh:TombstoneRetentionDays': '0.5' })).toBe(0.5);
  });
  it.each(['0', '-1', '0.00001', '36501', 'thirty', '1e3'])('refuses %s with a message naming the setting', (v) => {
    expect(() => read({ Mesh__TombstoneRetentionDays: v })).toThrow(/setting 'Mesh:TombstoneRetentionDays'/);
  });
  it('the purge period (test only) is 60 s by default, 1 to 60', () => {
    expect(readTombstonePurgeSeconds(new SettingsReader({}))).toBe(60);
    expect(readTombstonePurgeSeconds(new SettingsReader({ Mesh__TombstonePurgeSeconds: '1' }))).toBe(1);
    expect(() => readTombstonePurgeSeconds(new SettingsReader({ Mesh__TombstonePurgeSeconds: '0' }))).toThrow(/TombstonePurgeSeconds/);
  });
});

describe('the mesh change feed trim settings', () => {
  const r = (env: Record<string, string>) => new SettingsReader(env);
  it('defaults: rows kept 60 minutes, 7 days for exports, a trim every 5 minutes', () => {
    expect(readFeedRetentionMinutes(r({}))).toBe(60);
    expect(readFeedExportRetentionDays(r({}))).toBe(7);
    expect(readFeedTrimSeconds(r({}))).toBe(300);
  });
  it('fractions are allowed', () => {
    expect(readFeedRetentionMinutes(r({ Mesh__FeedRetentionMinutes: '0.5' }))).toBe(0.5);
    expect(readFeedExportRetentionDays(r({ Mesh__FeedExportRetentionDays: '1.5' }))).toBe(1.5);
  });
  it.each(['0', '-1', '0.001', '525601', 'soon', '1e3'])('refuses a retention of %s minutes naming the setting', (v) => {
    expect(() => readFeedRetentionMinutes(r({ Mesh__FeedRetentionMinutes: v }))).toThrow(/Mesh:FeedRetentionMinutes/);
  });
  it.each(['0', '0.00001', '36501', 'week'])('refuses an export retention of %s days naming the setting', (v) => {
    expect(() => readFeedExportRetentionDays(r({ Mesh__FeedExportRetentionDays: v }))).toThrow(/Mesh:FeedExportRetentionDays/);
  });
  it('the trim period is 1 to 3600 seconds', () => {
    expect(readFeedTrimSeconds(r({ Mesh__FeedTrimSeconds: '1' }))).toBe(1);
    expect(() => readFeedTrimSeconds(r({ Mesh__FeedTrimSeconds: '0' }))).toThrow(/Mesh:FeedTrimSeconds/);
    expect(() => readFeedTrimSeconds(r({ Mesh__FeedTrimSeconds: '3601' }))).toThrow(/Mesh:FeedTrimSeconds/);
  });
});

describe('plans and approvals settings', () => {
  test('defaults: plans and approvals expire after 24 hours, the four-eyes rule is on', () => {
    expect(readPlanSettings(new SettingsReader({}))).toEqual({
      planExpireHours: 24,
      approvalExpireHours: 24,
      requireSecondPerson: true,
      allowApplications: false,
    });
  });
  test('set, and a malformed value names its setting', () => {
    expect(
      readPlanSettings(
        new SettingsReader({
          Plans__ExpireHours: '2',
          Approvals__ExpireHours: '48',
          Approvals__RequireSecondPerson: 'false',
          Approvals__AllowApplications: 'true',
        }),
      ),
    ).toEqual({
      planExpireHours: 2,
      approvalExpireHours: 48,
      requireSecondPerson: false,
      allowApplications: true,
    });
    expect(() => readPlanSettings(new SettingsReader({ Approvals__AllowApplications: 'sometimes' }))).toThrow(/Approvals:AllowApplications/);
    expect(() => readPlanSettings(new SettingsReader({ Approvals__ExpireHours: '0' }))).toThrow(/Approvals:ExpireHours/);
    expect(() => readPlanSettings(new SettingsReader({ Approvals__RequireSecondPerson: 'maybe' }))).toThrow(/Approvals:RequireSecondPerson/);
  });
});
