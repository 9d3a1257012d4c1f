import type { MeshObject } from '../../../../lib/mesh/model';
import { ConfigError, SettingsReader } from '../../../../lib/core/config';
import { MAX_LEVELS, STEP_IDS, pagesInOrder, readExportOrderedMax, stepsOf } from '../../../../lib/sync/export/exportRun';

const TARGET = 'c-target';
const id = (i: number) => `a${String(i).padStart(7, '0')}`;

/** A person with a manager (by index) and, optionally, a link in the target already. */
function person(i: number, manager: number | null, linked = false): MeshObject {
  return {
    id: id(i),
    objectType: 'User',
    anchorValue: `E${i}`,
    createdOn: '2026-11-29T00:00:00.000Z',
    updatedOn: '2026-11-29T00:00:00.000Z',
    attributes: {},
    contributions: {},
    links: linked ? { [TARGET]: `anchor-${i}` } : {},
    relationships: manager === null ? [] : [{ type: 'manager', targetId: id(manager), targetAnchor: `E${manager}`, targetType: 'User' }],
    pendingReferences: [],
  };
}

describe('pagesInOrder: a full export in reference order', () => {
  it('puts every manager in an earlier page than the people who report to them (the tree of the worked example)', () => {
    // Person i reports to person floor((i - 1) / 10): levels of 1, 10, 100 and 89 people.
    const docs = Array.from({ length: 200 }, (_, i) => person(i, i === 0 ? null : Math.floor((i - 1) / 10)));
    // Given in reverse so the order comes from the references, not from the input.
    const pages = pagesInOrder([...docs].reverse(), TARGET, 2000);
    expect(pages.map((p) => p.length)).toEqual([1, 10, 100, 89]);
    const pageOf = new Map(pages.flatMap((p, n) => p.map((x) => [x, n] as const)));
    for (let i = 1; i < 200; i++) expect(pageOf.get(id(Math.floor((i - 1) / 10)))!).toBeLessThan(pageOf.get(id(i))!);
    expect(new Set(pages.flat()).size).toBe(200);
  });

  it('cuts a level into pages of at most the page size, in id order', () => {
    const docs = Array.from({ length: 5 }, (_, i) => person(i, null));
    expect(pagesInOrder(docs, TARGET, 2)).toEqual([[id(0), id(1)], [id(2), id(3)], [id(4)]]);
  });

  it('does not hold an object back for one that is in the target already', () => {
    const docs = [person(0, null, true), person(1, 0), person(2, 1)];
    // 0 is linked: 1 does not wait for it; 2 waits for 1 (to be added).
    expect(pagesInOrder(docs, TARGET, 10)).toEqual([[id(0), id(1)], [id(2)]]);
  });

  it('does not wait for an object outside the export (another type, or gone)', () => {
    expect(pagesInOrder([person(1, 99), person(2, 1)], TARGET, 10)).toEqual([[id(1)], [id(2)]]);
  });

  it('cuts a cycle where it closes: every object once, and the export goes on', () => {
    const docs = [person(0, 2), person(1, 0), person(2, 1), person(3, 3)];
    const pages = pagesInOrder(docs, TARGET, 10);
    expect(pages.flat().sort()).toEqual([id(0), id(1), id(2), id(3)]);
    // A self-reference holds nothing back.
    expect(pages[0]).toContain(id(3));
  });

  it('walks a chain of 30,000 without overflowing the stack, and puts what is deeper than MAX_LEVELS in one level', () => {
    const docs = Array.from({ length: 30_000 }, (_, i) => person(i, i === 0 ? null : i - 1));
    const pages = pagesInOrder(docs, TARGET, 2000);
    // One page per level up to the last, whose 30,000 - 31 objects go in pages of 2,000.
    expect(pages.slice(0, MAX_LEVELS - 1)).toEqual(Array.from({ length: MAX_LEVELS - 1 }, (_, i) => [id(i)]));
    expect(pages.slice(MAX_LEVELS - 1).map((p) => p.length)).toEqual([...Array(14).fill(2000), 30_000 - (MAX_LEVELS - 1) - 14 * 2000]);
    expect(new Set(pages.flat()).size).toBe(30_000);
  });
});

describe('Export:OrderedMax', () => {
  const read = (env: Record<string, string>) => readExportOrderedMax(new SettingsReader(env));

  it('defaults to 20,000 and reads either spelling; 0 is allowed (every full export partition by partition)', () => {
    expect(read({})).toBe(20_000);
    expect(read({ Export__OrderedMax: '0' })).toBe(0);
    expect(read({ 'Export:OrderedMax': '100000' })).toBe(100_000);
  });

  it.each(['-1', '100001', '2.5', 'many'])('refuses %s with a message naming the setting', (v) => {
    expect(() => read({ Export__OrderedMax: v })).toThrow(ConfigError);
    expect(() => read({ Export__OrderedMax: v })).toThrow(/setting 'Export:OrderedMax'/);
  });
});

describe('steps of a full export in reference order', () => {
  it('puts consecutive small pages in one step while they hold at most a page of ids together', () => {
    // The bench's org chart of 5,000: levels of 1, 10, 100, 1,000, then 2,000 and 1,889 ids.
    expect(stepsOf([1, 10, 100, 1000, 2000, 1889])).toEqual([4, 1, 1]);
    expect(stepsOf([1, 10, 100, 1000, 889])).toEqual([5]);
    expect(stepsOf([1, 1999, 1])).toEqual([2, 1]);
    expect(stepsOf([2000, 2000])).toEqual([1, 1]);
    expect(stepsOf([])).toEqual([]);
  });

  it('gives a full export steps of up to STEP_IDS ids: the 5,000 of the bench in one step, 20,000 in three', () => {
    expect(STEP_IDS).toBe(8000);
    expect(stepsOf([1, 10, 100, 1000, 2000, 1889], STEP_IDS)).toEqual([6]);
    // 20,000 people: levels of 1, 10, 100, 1,000, 10,000 (five pages of 2,000) and 8,889 (4 pages and 889).
    const sizes = [1, 10, 100, 1000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 889];
    expect(stepsOf(sizes, STEP_IDS)).toEqual([7, 4, 3]);
  });

  it('covers every page once, in order', () => {
    const sizes = [3, 500, 1700, 40, 40, 2000, 7];
    const steps = stepsOf(sizes, 2000);
    expect(steps.reduce((a, b) => a + b, 0)).toBe(sizes.length);
    expect(steps).toEqual([2, 3, 1, 1]);
  });
});
