import { driftOf } from '../../../lib/plans/binding';
import type { BoundItem } from '../../../lib/storage/runBindings';

/** The comparison of a plan's bound configuration with the configuration now (pure). */
describe('driftOf', () => {
  const rule = (id: string, hash: string, name = `Rule ${id}`): BoundItem => ({ targetType: 'rule', id, name, kind: 'FlowRule', hash });
  const connector = (id: string, hash: string): BoundItem => ({ targetType: 'connector', id, name: `Connector ${id}`, hash });

  test('the same configuration, in any order: no drift', () => {
    expect(driftOf([connector('c', 'x'), rule('1', 'a'), rule('2', 'b')], [rule('2', 'b'), rule('1', 'a'), connector('c', 'x')])).toEqual([]);
  });

  test('a rule changed, a rule gone (deleted or disabled), a rule added (or enabled), a connector changed: each named', () => {
    const drift = driftOf([connector('c', 'x'), rule('1', 'a'), rule('2', 'b')], [connector('c', 'y'), rule('1', 'a2', 'Renamed'), rule('3', 'c')]);
    expect(drift).toEqual([
      { targetType: 'connector', id: 'c', label: "connector 'Connector c' (id c)", change: 'changed' },
      { targetType: 'rule', id: '1', label: "rule 'Renamed' (FlowRule, id 1)", change: 'changed' },
      { targetType: 'rule', id: '2', label: "rule 'Rule 2' (FlowRule, id 2)", change: 'removed' },
      { targetType: 'rule', id: '3', label: "rule 'Rule 3' (FlowRule, id 3)", change: 'added' },
    ]);
  });
});
