import { entityJson } from '../../../lib/storage/transaction';

/** The former way: the same object built, then JSON.stringify (what the service has always been sent). */
function reference(e: Record<string, unknown>): string {
  const out: Record<string, unknown> = { PartitionKey: e.partitionKey, RowKey: e.rowKey };
  for (const [k, v] of Object.entries(e)) {
    if (k === 'partitionKey' || k === 'rowKey' || k === 'etag' || v === undefined) continue;
    if (v instanceof Date) {
      out[k] = v.toISOString();
      out[`${k}@odata.type`] = 'Edm.DateTime';
    } else out[k] = v;
  }
  return JSON.stringify(out);
}

describe('entityJson (transaction bodies)', () => {
  const cases: Record<string, unknown>[] = [
    { partitionKey: 'p', rowKey: 'r' },
    { partitionKey: "c1_a'1", rowKey: 'k%2f', objectType: 'User', hash: 'h', n: 3, ok: true, no: false, nothing: null, gone: undefined, etag: 'W/"x"' },
    { partitionKey: 'p', rowKey: 'r', d0: JSON.stringify({ a: 'quote " backslash \\ line\n tab\t', é: 'Zoë 😀', ctl: '\u0001\u2028' }), dn: 1 },
    { partitionKey: 'p', rowKey: 'r', when: new Date('2026-11-25T10:00:00.000Z'), after: 'x' },
    { partitionKey: 'p', rowKey: 'r', 'x@odata.type': 'Edm.String', x: 'y' },
    { partitionKey: 'p', rowKey: 'r', PartitionKey: 'other' },
    { partitionKey: 'p', rowKey: 'r', big: 1e21, neg: -0.5, zero: -0 },
  ];
  it.each(cases.map((c, i) => [i, c]))('case %i is the text JSON.stringify gives of the built object', (_i, e) => {
    expect(entityJson(e)).toBe(reference(e));
  });
});
