import type { ConnectorObject } from '../../../../lib/connectors/sdk';
import { MeshIndex } from '../../../../lib/mesh/joinIndex';
import { exhausted, failedAgain, pendingOf, SKIPPED_NOTE_PREFIX, skippedNote, withSkipped } from '../../../../lib/sync/export/exportRetry';
import type { CsObject } from '../../../../lib/sync/model';
import { planImport, WorkingSet } from '../../../../lib/sync/planner';
import { fromCsEntity, toCsEntity } from '../../../../lib/sync/space/connectorSpace';
import { compileRuleSet } from '../../../../lib/sync/rules';

/** The pure parts of export retry (lib/sync/export/exportRetry.ts), and what an import of the target keeps of it. */

const C1 = '00000000-0000-4000-8000-0000000000c1';
const T1 = '2026-03-01T10:00:00.000Z';
const T2 = '2026-03-02T10:00:00.000Z';

describe('failures and attempts', () => {
  test('each failure counts one attempt more and records the run, time and message', () => {
    const first = failedAgain(undefined, 'refused', 'run-1', T1);
    expect(first).toEqual({ message: 'refused', runId: 'run-1', occurredOn: T1, attempts: 1 });
    expect(failedAgain(first, 'again', 'run-2', T2)).toEqual({ message: 'again', runId: 'run-2', occurredOn: T2, attempts: 2 });
    expect(failedAgain(undefined, 'x'.repeat(5000), 'r', T1).message).toHaveLength(2000);
  });

  test('an object is skipped from the maximum on, and never without a failure', () => {
    expect(exhausted(undefined, 1)).toBe(false);
    expect(exhausted(failedAgain(undefined, 'm', 'r', T1), 2)).toBe(false);
    expect(exhausted({ message: 'm', runId: 'r', occurredOn: T1, attempts: 2 }, 2)).toBe(true);
    expect(exhausted({ message: 'm', runId: 'r', occurredOn: T1, attempts: 7 }, 5)).toBe(true);
  });

  test('the pending change keeps when it was first staged while it stays the same kind of change', () => {
    const change = { kind: 'update' as const, objectType: 'User', anchor: 'a', attributes: { sn: 'X' } };
    const first = pendingOf(change, T1);
    expect(first).toEqual({ kind: 'update', attributes: { sn: 'X' }, stagedOn: T1 });
    expect(pendingOf({ ...change, attributes: { sn: 'Y' } }, T2, first)).toEqual({ kind: 'update', attributes: { sn: 'Y' }, stagedOn: T1 });
    expect(pendingOf({ ...change, kind: 'delete', attributes: {} }, T2, first).stagedOn).toBe(T2);
  });
});

describe("the run's note of skipped objects", () => {
  const objectError = { object: 'E9', message: 'refused' };

  test('counts each object once across pages and passes, first in the list, not as an object error', () => {
    let t: { errors: { object?: string; message: string }[]; skipped?: string[] } = { errors: [objectError] };
    t = withSkipped(t, ['m1', 'm2'], 5);
    t = withSkipped(t, ['m2', 'm3'], 5);
    expect(t.errors).toEqual([skippedNote(3, 5), objectError]);
    expect(t.errors[0].message.startsWith(SKIPPED_NOTE_PREFIX)).toBe(true);
    expect(t.errors[0].message).toContain('3 objects whose export failed 5 times');
    expect(t.errors[0]).not.toHaveProperty('object');
  });

  test('leaves totals untouched when nothing was skipped, and keeps the list at 100', () => {
    const t = { errors: [objectError] };
    expect(withSkipped(t, [], 5)).toBe(t);
    const full = { errors: Array.from({ length: 100 }, (_, i) => ({ object: `o${i}`, message: 'm' })) };
    const noted = withSkipped(full, ['m1'], 1);
    expect(noted.errors).toHaveLength(100);
    expect(noted.errors[0]).toEqual(skippedNote(1, 1));
    expect(skippedNote(1, 1).message).toContain('1 object whose export failed 1 time (');
  });
});

describe('an import of the target keeps the pending change, its failures and the id', () => {
  const rules = compileRuleSet(C1, []);
  const object = (anchor: string): ConnectorObject => ({ anchor, objectType: 'User', attributes: { sn: 'Target' } });
  const prev: CsObject = {
    anchor: 'a1',
    objectType: 'User',
    attributes: { sn: 'Old' },
    hash: 'h0',
    rulesHash: rules.hash,
    meshId: null,
    pendingExport: { kind: 'update', attributes: { sn: 'Mesh' }, stagedOn: T1 },
    exportError: { message: 'refused', runId: 'r1', occurredOn: T1, attempts: 2 },
    csObjectId: 'kept-id',
    exportedOn: T1,
    updatedOn: T1,
  };

  test('an object read again', () => {
    const plan = planImport({ rules, now: T2, ws: new WorkingSet(new MeshIndex(new Set())) }, 'a1', object('a1'), 'h1', prev);
    expect(plan.cs).toMatchObject({ pendingExport: prev.pendingExport, exportError: prev.exportError, csObjectId: 'kept-id', exportedOn: T1, importedOn: T2 });
  });

  test('an object gone from the target: nothing pending any more', () => {
    const plan = planImport({ rules, now: T2, ws: new WorkingSet(new MeshIndex(new Set())) }, 'a1', null, '', prev);
    expect(plan.cs.deleted).toBe(true);
    expect(plan.cs.pendingExport).toBeUndefined();
    expect(plan.cs.exportError).toBeUndefined();
  });
});

describe('the connector-space row keeps the retry state and the dates', () => {
  const base: CsObject = { anchor: 'a1', objectType: 'User', attributes: { sn: 'X' }, hash: 'h', rulesHash: 'r', meshId: null, updatedOn: T2 };

  test('failure, pending change and kept id round-trip', () => {
    const row: CsObject = {
      ...base,
      pendingExport: { kind: 'add', attributes: { sn: 'Y' }, stagedOn: T1 },
      exportError: failedAgain(undefined, 'm', 'run', T1),
      csObjectId: 'kept',
      exportedOn: T1,
    };
    expect(fromCsEntity(toCsEntity(C1, row))).toMatchObject({
      pendingExport: row.pendingExport,
      exportError: row.exportError,
      csObjectId: 'kept',
      exportedOn: T1,
    });
  });

  test('an import stores no date of its own (it is the row time); another write keeps it', () => {
    const imported = toCsEntity(C1, { ...base, importedOn: T2 });
    expect(imported).not.toHaveProperty('io');
    expect(fromCsEntity(imported).importedOn).toBe(T2);
    const laterWrite = toCsEntity(C1, { ...base, importedOn: T1, updatedOn: T2 });
    expect(fromCsEntity(laterWrite).importedOn).toBe(T1);
    expect(fromCsEntity(toCsEntity(C1, { ...base, hash: '' })).importedOn).toBeUndefined();
  });
});
