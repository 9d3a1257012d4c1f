import { effectiveStatus } from '../../../lib/instances/status';

describe('effectiveStatus', () => {
  const now = new Date('2026-11-21T10:00:00.000Z');
  const ago = (s: number) => new Date(now.getTime() - s * 1000).toISOString();

  test('a recent heartbeat is active, or paused when paused', () => {
    expect(effectiveStatus(ago(5), false, now, 60)).toBe('active');
    expect(effectiveStatus(ago(5), true, now, 60)).toBe('paused');
  });

  test('no heartbeat for OfflineAfterSeconds is offline, paused or not', () => {
    expect(effectiveStatus(ago(59.999), false, now, 60)).toBe('active');
    expect(effectiveStatus(ago(60), false, now, 60)).toBe('offline');
    expect(effectiveStatus(ago(61), true, now, 60)).toBe('offline');
    expect(effectiveStatus(ago(3), false, now, 2)).toBe('offline');
  });

  test('an unreadable heartbeat is offline', () => {
    expect(effectiveStatus('', false, now, 60)).toBe('offline');
    expect(effectiveStatus('not a date', true, now, 60)).toBe('offline');
  });

  test('a heartbeat slightly in the future (clock skew between instances) is active', () => {
    expect(effectiveStatus(new Date(now.getTime() + 2000).toISOString(), false, now, 60)).toBe('active');
  });
});
