import { fieldChanges, type ConnectorSnapshot } from '../../../lib/config/snapshots';

const connector = (config: Record<string, unknown>, over: Partial<ConnectorSnapshot> = {}): ConnectorSnapshot => ({
  id: 'c1',
  name: 'HR',
  type: 'sql',
  config,
  secretPaths: [['password']],
  sealedSecrets: 'sealed-blob-never-shown',
  createdOn: '2026-01-01T00:00:00.000Z',
  updatedOn: '2026-01-01T00:00:00.000Z',
  ...over,
});

describe('fieldChanges: what an update changes, field by field', () => {
  it('walks objects to their leaves, compares arrays whole, skips bookkeeping, names unset sides null', () => {
    const before = connector({ host: 'db1', thresholds: { deletes: { count: 10 } }, tables: ['a', 'b'] });
    const after = connector(
      { host: 'db2', thresholds: { deletes: { count: 10, percent: 5 } }, tables: ['a', 'b', 'c'] },
      { name: 'HR database', updatedOn: '2026-02-01T00:00:00.000Z', sealedSecrets: 'another-seal' },
    );
    expect(fieldChanges('connector', before, after)).toEqual([
      { path: '/config/host', before: 'db1', after: 'db2' },
      { path: '/config/tables', before: ['a', 'b'], after: ['a', 'b', 'c'] },
      { path: '/config/thresholds/deletes/percent', before: null, after: 5 },
      { path: '/name', before: 'HR', after: 'HR database' },
    ]);
  });

  it('shows a changed secret as ******** on both sides, and never a sealed blob', () => {
    const before = connector({ host: 'db1' });
    const changes = fieldChanges('connector', before, connector({ host: 'db1' }, { sealedSecrets: 'new-seal' }), [['password']]);
    expect(changes).toEqual([{ path: '/config/password', before: '********', after: '********' }]);
    // A secret that was not there before.
    const added = fieldChanges('connector', connector({}, { secretPaths: [] }), connector({}), [['password']]);
    expect(added).toEqual([{ path: '/config/password', before: null, after: '********' }]);
    expect(JSON.stringify([changes, added])).not.toMatch(/seal/);
  });

  it('lists a rule or schedule field by its path', () => {
    const rule = { ruleId: 'r1', ruleName: 'flow sn', ruleType: 'FlowRule', priority: 100, createdOn: 'x', updatedOn: 'x' };
    expect(fieldChanges('rule', rule as never, { ...rule, priority: 105, updatedOn: 'y' } as never)).toEqual([{ path: '/priority', before: 100, after: 105 }]);
  });
});
