import { deflateRawSync, brotliDecompressSync } from 'node:zlib';
import { decodeItems, encodeItems, FORMAT, packItems, unpackItems } from '../../../lib/storage/changeCodec';
import type { StoredChange } from '../../../lib/storage/runChanges';

const base: StoredChange = {
  target: 'mesh',
  operation: 'Add',
  csObjectId: '0f1e2d3c-4b5a-5987-8766-554433221100',
  meshObjectId: '11111111-2222-5333-8444-555555555555',
  anchor: 'u1',
  dn: null,
  attributes: { employeeId: { old: null, new: 'E000001' }, sn: { old: null, new: 'SURNAME1' } },
  outcome: 'planned',
  error: null,
  key: 'u1',
  fp: 'AbCdEfGhIjKlMnOp|',
};

/** Items covering each layout choice: key absent, the anchor or another; fp absent; every operation and outcome. */
const variety: StoredChange[] = [
  base,
  { ...base, operation: 'Update', attributes: { mail: { old: 'a@x', new: null }, memberOf: { old: ['b', 'a'], new: [] }, n: { old: 1, new: true } } },
  { ...base, operation: 'Rename', dn: 'CN=New,DC=x', outcome: 'applied', fp: undefined as unknown as string },
  {
    target: 'connector',
    operation: 'Delete',
    csObjectId: null,
    meshObjectId: null,
    anchor: null,
    dn: 'uid=gone,dc=x',
    attributes: { password: { old: '********', new: null } },
    outcome: 'drifted',
    error: 'Its source object or its mesh object changed since the plan: not applied.',
  },
  { ...base, target: 'connector', anchor: null, key: 'cs:abc', fp: 'gone|h|m' },
  { ...base, anchor: 'a1', key: 'mesh-id-1', outcome: 'failed', error: 'Rule failed: x', attributes: {} },
  { ...base, operation: 'Delete', anchor: '1', key: '1' },
];
// An item without fp stores no fp (not `fp: undefined`): as the engine builds it.
delete (variety[2] as { fp?: string }).fp;

describe('run change pages: the stored format', () => {
  test('items read back exactly as written, properties in the same order', async () => {
    const data = await packItems(variety);
    const back = await unpackItems(data, FORMAT);
    expect(back).toEqual(variety);
    expect(back.map((c) => Object.keys(c))).toEqual(variety.map((c) => Object.keys(c)));
    expect(back.map((c) => Object.keys(c.attributes))).toEqual(variety.map((c) => Object.keys(c.attributes)));
    // The compact layout: one array an item, the key of an item keyed by its anchor not repeated.
    const text = JSON.parse(brotliDecompressSync(data).toString('utf8')) as { v: number; c: unknown[][] };
    expect(text.v).toBe(FORMAT);
    expect(text.c[0]).toEqual([
      0,
      0,
      1,
      base.csObjectId,
      base.meshObjectId,
      'u1',
      null,
      ['employeeId', null, 'E000001', 'sn', null, 'SURNAME1'],
      null,
      1,
      base.fp,
    ]);
    expect(text.c[3].slice(9)).toEqual([0, 0]);
  });

  test('a page with an item the compact layout does not know is kept as objects, exactly', () => {
    const odd = [base, { ...base, connectorId: 'c2' } as StoredChange, { ...base, dn: undefined } as unknown as StoredChange];
    const text = encodeItems(odd);
    expect(Object.keys(JSON.parse(text) as object)).toEqual(['v', 'o']);
    expect(decodeItems(text)).toEqual(JSON.parse(JSON.stringify(odd)));
    expect(decodeItems(encodeItems([]))).toEqual([]);
  });

  test('rows of format 1 (deflated JSON, before the format column) still read; an unknown format is refused', async () => {
    const old = deflateRawSync(Buffer.from(JSON.stringify(variety), 'utf8'), { level: 1 });
    expect(await unpackItems(old, undefined)).toEqual(JSON.parse(JSON.stringify(variety)));
    expect(await unpackItems(old, 1)).toEqual(JSON.parse(JSON.stringify(variety)));
    await expect(unpackItems(old, 3)).rejects.toThrow('format 3');
  });

  test('a 2,000-item page is smaller than format 1 made it', async () => {
    const page = Array.from({ length: 2000 }, (_, i) => ({
      ...base,
      csObjectId: `0f1e2d3c-4b5a-5987-8766-${String(i).padStart(12, '0')}`,
      anchor: `u${i}`,
      key: `u${i}`,
      attributes: { employeeId: { old: null, new: `E${i}` }, sn: { old: null, new: `SURNAME${i}` } },
    }));
    const before = deflateRawSync(Buffer.from(JSON.stringify(page), 'utf8'), { level: 1 });
    const after = await packItems(page);
    expect(after.length).toBeLessThan(before.length);
    expect(await unpackItems(after, FORMAT)).toEqual(page);
  });
});
