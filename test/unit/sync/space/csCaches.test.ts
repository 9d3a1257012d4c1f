import { CsCache } from '../../../../lib/sync/space/csCache';
import { CsCaches } from '../../../../lib/sync/space/csCaches';
import { CsSummaries } from '../../../../lib/sync/space/csSummaries';
import { readIdleCsCaches, SettingsReader } from '../../../../lib/core/config';

const cache = () => new CsCache(new CsSummaries());

describe('CsCaches: connector-space caches kept while a run goes, and for a few idle connectors', () => {
  let now = 0;
  let idle = 1;
  const make = () =>
    new CsCaches(
      () => idle,
      () => now,
    );
  beforeEach(() => {
    now = 1_000_000;
    idle = 1;
  });

  it('keeps only the most recently used idle connector when no run is going', () => {
    const c = make();
    const a = cache();
    c.set('a', a);
    c.set('b', cache());
    expect(c.has('a')).toBe(false);
    expect(c.has('b')).toBe(true);
    expect(c.size).toBe(1);
  });

  it('keeps the caches of connectors with a run going, whatever the limit, and drops them when the run ends', () => {
    idle = 0;
    const c = make();
    c.runStarted('r1', 'a');
    c.runStarted('r2', 'b');
    const a = cache();
    c.set('a', a);
    c.set('b', cache());
    c.set('c', cache());
    expect([c.has('a'), c.has('b'), c.has('c')]).toEqual([true, true, false]);
    expect(c.get('a')).toBe(a);
    c.runEnded('r1');
    expect([c.has('a'), c.has('b')]).toEqual([false, true]);
    c.runEnded('r2');
    expect(c.size).toBe(0);
  });

  it('a connector stays running while any of its runs goes', () => {
    idle = 0;
    const c = make();
    c.runStarted('r1', 'a');
    c.runStarted('r2', 'a');
    c.set('a', cache());
    c.runEnded('r1');
    expect(c.has('a')).toBe(true);
    c.runEnded('r2');
    expect(c.has('a')).toBe(false);
  });

  it('drops the least recently used idle cache first (get counts as a use)', () => {
    idle = 2;
    const c = make();
    const a = cache();
    c.set('a', a);
    c.set('b', cache());
    expect(c.get('a')).toBe(a);
    c.set('c', cache());
    expect([c.has('a'), c.has('b'), c.has('c')]).toEqual([true, false, true]);
  });

  it('a run not heard of for an hour no longer keeps its cache; a page of it heard again does', () => {
    idle = 0;
    const c = make();
    c.runStarted('r1', 'a');
    c.set('a', cache());
    now += 59 * 60 * 1000;
    c.runStarted('r1', 'a');
    now += 59 * 60 * 1000;
    c.set('b', cache());
    expect(c.has('a')).toBe(true);
    now += 2 * 60 * 1000;
    expect(c.running().has('a')).toBe(false);
    c.set('b', cache());
    expect(c.has('a')).toBe(false);
  });

  it('ending a run this process never heard of changes nothing', () => {
    const c = make();
    c.set('a', cache());
    c.runEnded('other');
    expect(c.has('a')).toBe(true);
  });

  it('Sync:IdleConnectorSpaceCaches: default 2, 0 to 1000, a malformed value names the setting', () => {
    expect(readIdleCsCaches(new SettingsReader({}))).toBe(2);
    expect(readIdleCsCaches(new SettingsReader({ Sync__IdleConnectorSpaceCaches: '0' }))).toBe(0);
    expect(() => readIdleCsCaches(new SettingsReader({ Sync__IdleConnectorSpaceCaches: 'two' }))).toThrow(/IdleConnectorSpaceCaches/);
    expect(() => readIdleCsCaches(new SettingsReader({ Sync__IdleConnectorSpaceCaches: '1001' }))).toThrow(/IdleConnectorSpaceCaches/);
  });
  it('keeps pinned connectors (continuous mode) like running ones, until they are pinned no more', () => {
    idle = 0;
    const c = make();
    c.pin(['a', 'b']);
    c.set('a', cache());
    c.set('b', cache());
    c.set('c', cache());
    expect([c.has('a'), c.has('b'), c.has('c')]).toEqual([true, true, false]);
    c.pin(['b']);
    expect([c.has('a'), c.has('b')]).toEqual([false, true]);
    c.pin([]);
    expect(c.size).toBe(0);
  });
});
