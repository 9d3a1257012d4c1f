import type { MeshObject } from '../../../../lib/mesh/model';
import type { CsObject } from '../../../../lib/sync/model';

/**
 * StepWrites (lib/sync/export/exportPage.ts): the connector-space rows and links of a full export's pages, written
 * at the step's end or, from a quarter of a page queued, while the next page goes to the target (writeSoon). The
 * storage calls are replaced by controllable doubles: the order of the writes and the way a failure reaches the
 * step are pure logic (the integration suites exportOrder and crash run it against real targets and storage).
 */
const calls: string[] = [];
let nextCsWrite: (() => Promise<void>) | undefined;

jest.mock('../../../../lib/sync/space/connectorSpace', () => ({
  ...jest.requireActual('../../../../lib/sync/space/connectorSpace'),
  writeCsObjects: jest.fn(async (_cid: string, rows: CsObject[]) => {
    calls.push(`rows ${rows.map((r) => r.anchor).join(',')} start`);
    const w = nextCsWrite;
    nextCsWrite = undefined;
    if (w) await w();
    calls.push(`rows ${rows.map((r) => r.anchor).join(',')} end`);
  }),
}));
jest.mock('../../../../lib/mesh/store', () => ({
  ...jest.requireActual('../../../../lib/mesh/store'),
  patchMeshLinks: jest.fn(async (ids: Iterable<string>) => {
    calls.push(`links ${[...ids].join(',')}`);
    return [];
  }),
}));

import { StepWrites } from '../../../../lib/sync/export/exportPage';
import type { ExportRetry } from '../../../../lib/sync/export/exportRetry';

const info = { runId: 'run-1', connectorId: 'c-target', runType: 'Export' as const, dryRun: false };
const retry = { commit: async () => undefined } as unknown as ExportRetry;
const row = (anchor: string): CsObject => ({ anchor, objectType: 'User', attributes: {}, hash: '', rulesHash: '', meshId: `m-${anchor}`, updatedOn: 'now' });
const doc = (anchor: string): MeshObject => ({
  id: `m-${anchor}`,
  objectType: 'User',
  anchorValue: anchor,
  createdOn: 'now',
  updatedOn: 'now',
  attributes: {},
  contributions: {},
  links: {},
  relationships: [],
  pendingReferences: [],
});
const queue = (w: StepWrites, anchors: string[]) =>
  w.add(
    anchors.map(row),
    anchors.map((a) => ({ id: `m-${a}`, anchor: a, provisioned: true })),
    anchors.map(doc),
    'now',
    retry,
  );

beforeEach(() => {
  calls.length = 0;
  nextCsWrite = undefined;
});

describe('StepWrites', () => {
  it('writes each batch rows first, then links, one batch after the other, while the caller goes on', async () => {
    const w = new StepWrites(info);
    let release!: () => void;
    nextCsWrite = () => new Promise<void>((r) => (release = r));
    queue(w, ['a', 'b']);
    w.writeSoon();
    // The caller goes on (the next page) while the first batch is written.
    queue(w, ['c']);
    expect(w.queued).toBe(1);
    w.writeSoon();
    await new Promise((r) => setImmediate(r));
    // The second batch waits for the first: its rows are not written before the first batch's links.
    expect(calls).toEqual(['rows a,b start']);
    release();
    await w.flush();
    expect(calls).toEqual(['rows a,b start', 'rows a,b end', 'links m-a,m-b', 'rows c start', 'rows c end', 'links m-c']);
    expect(w.pending).toBe(false);
  });

  it('a failed write fails the next page before it reaches the target (check) and the flush, and writes nothing after it', async () => {
    const w = new StepWrites(info);
    nextCsWrite = async () => {
      throw new Error('storage refused the transaction');
    };
    queue(w, ['a']);
    w.writeSoon();
    queue(w, ['b']);
    w.writeSoon();
    await new Promise((r) => setImmediate(r));
    expect(() => w.check()).toThrow('storage refused the transaction');
    await expect(w.flush()).rejects.toThrow('storage refused the transaction');
    // Neither the failed batch's links nor the next batch were written.
    expect(calls).toEqual(['rows a start']);
  });

  it('flush with nothing queued and nothing in flight does nothing', async () => {
    const w = new StepWrites(info);
    await w.flush();
    expect(w.pending).toBe(false);
    expect(calls).toEqual([]);
  });
});
