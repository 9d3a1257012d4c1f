import { applyAll, type AppliedWrite, type ConfigWriter, type PlannedWrite } from '../../../lib/config/writer';
import type { Snapshot } from '../../../lib/config/snapshots';

/**
 * The all-or-nothing rule of a configuration import (lib/config/writer.ts `applyAll`), with an in-memory writer
 * that fails at a chosen write: the writes made before it are undone in reverse order, so the configuration is
 * as it was, and the failure is thrown again. (Over HTTP, test/integration/admin/configHistory.test.ts makes a
 * real write fail halfway.)
 */
type Key = string;
class MemoryWriter implements ConfigWriter {
  readonly state = new Map<Key, Snapshot>();
  readonly versions = new Set<string>();
  readonly log: string[] = [];
  private n = 0;
  constructor(
    private readonly failAt: number,
    private readonly failUndoOf?: string,
  ) {}

  async apply(w: PlannedWrite): Promise<AppliedWrite> {
    if (++this.n === this.failAt) throw new Error(`write ${this.n} failed`);
    const key = `${w.targetType}:${w.targetId}`;
    if (w.after) this.state.set(key, w.after);
    else this.state.delete(key);
    const versionId = `v${this.n}`;
    this.versions.add(versionId);
    this.log.push(`apply ${key}`);
    return { ...w, versionId };
  }

  async undo(w: AppliedWrite): Promise<void> {
    const key = `${w.targetType}:${w.targetId}`;
    this.log.push(`undo ${key}`);
    if (key === this.failUndoOf) throw new Error('undo failed');
    if (w.before) this.state.set(key, w.before);
    else this.state.delete(key);
    this.versions.delete(w.versionId);
  }
}

const rule = (id: string, name: string) => ({ ruleId: id, ruleName: name }) as unknown as Snapshot;
const seed = (writer: MemoryWriter) => {
  writer.state.set('rule:a', rule('a', 'A'));
  writer.state.set('rule:b', rule('b', 'B'));
};
const WRITES: PlannedWrite[] = [
  { targetType: 'rule', targetId: 'a', action: 'update', before: rule('a', 'A'), after: rule('a', 'A2') },
  { targetType: 'rule', targetId: 'c', action: 'create', before: null, after: rule('c', 'C') },
  { targetType: 'rule', targetId: 'b', action: 'delete', before: rule('b', 'B'), after: null },
  { targetType: 'rule', targetId: 'd', action: 'create', before: null, after: rule('d', 'D') },
];

describe('applyAll', () => {
  it('applies every write in order when none fails', async () => {
    const writer = new MemoryWriter(0);
    seed(writer);
    const applied = await applyAll(writer, WRITES, null);
    expect(applied.map((w) => w.targetId)).toEqual(['a', 'c', 'b', 'd']);
    expect([...writer.state.keys()].sort()).toEqual(['rule:a', 'rule:c', 'rule:d']);
    expect(writer.state.get('rule:a')).toEqual(rule('a', 'A2'));
    expect(writer.versions.size).toBe(4);
  });

  it.each([1, 2, 3, 4])('a failure at write %i undoes the writes before it, in reverse order: the state is as it was', async (failAt) => {
    const writer = new MemoryWriter(failAt);
    seed(writer);
    const before = new Map(writer.state);
    await expect(applyAll(writer, WRITES, null)).rejects.toThrow(`write ${failAt} failed`);
    expect(writer.state).toEqual(before);
    expect(writer.versions.size).toBe(0);
    const made = WRITES.slice(0, failAt - 1).map((w) => `rule:${w.targetId}`);
    expect(writer.log).toEqual([...made.map((k) => `apply ${k}`), ...[...made].reverse().map((k) => `undo ${k}`)]);
  });

  it('an undo that fails is reported and the other undos still run; the original failure is thrown', async () => {
    const writer = new MemoryWriter(4, 'rule:c');
    seed(writer);
    const failed: string[] = [];
    await expect(applyAll(writer, WRITES, null, (w) => failed.push(w.targetId))).rejects.toThrow('write 4 failed');
    expect(failed).toEqual(['c']);
    expect(writer.log.filter((l) => l.startsWith('undo'))).toEqual(['undo rule:b', 'undo rule:c', 'undo rule:a']);
    expect(writer.state.get('rule:a')).toEqual(rule('a', 'A'));
    expect(writer.state.get('rule:b')).toEqual(rule('b', 'B'));
  });
});
