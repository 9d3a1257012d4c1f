import { ruleErrors, toRule } from '../../../lib/api/rules';
import type { RuleRequest } from '../../../lib/schemas/rules';

/** effectiveFromAttribute: an inbound FlowRule's option, refused elsewhere; now() in flows and computed attributes, not in joins. */
const C = '3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b';
const exists = async () => true;
const flow = (extra: Partial<RuleRequest>): RuleRequest =>
  ({ ruleName: 'r', ruleType: 'FlowRule', connectorId: C, sourceAttribute: 'title', targetAttribute: 'title', confidence: 50, ...extra }) as RuleRequest;

test('an inbound FlowRule keeps effectiveFromAttribute', async () => {
  const body = flow({ effectiveFromAttribute: 'titleEffective' });
  expect(await ruleErrors(body, exists)).toEqual([]);
  expect(toRule('id', body, 't', 't')).toMatchObject({ direction: 'inbound', effectiveFromAttribute: 'titleEffective' });
  expect(toRule('id', flow({}), 't', 't').effectiveFromAttribute).toBeUndefined();
});

test('on an outbound FlowRule or another rule type it is a field error', async () => {
  expect(await ruleErrors(flow({ direction: 'outbound', effectiveFromAttribute: 'titleEffective' }), exists)).toEqual([
    { path: '/effectiveFromAttribute', message: 'applies only to an inbound FlowRule' },
  ]);
  const join = { ruleName: 'j', ruleType: 'JoinRule', connectorId: C, sourceAttribute: 'a', targetAttribute: 'b', effectiveFromAttribute: 'x' } as RuleRequest;
  expect(await ruleErrors(join, exists)).toEqual([{ path: '/effectiveFromAttribute', message: 'applies only to a FlowRule' }]);
});

test('now() is accepted in flows and computed attributes, refused in joins and projections', async () => {
  expect(await ruleErrors(flow({ direction: 'outbound', transformScript: 'now() > date(source) ? "a" : "b"' }), exists)).toEqual([]);
  expect(await ruleErrors(flow({ transformScript: 'now() > date(source)' }), exists)).toEqual([]);
  const computed = {
    ruleName: 'c',
    ruleType: 'MeshComposerRule',
    targetAttribute: 'status',
    transformScript: 'now() >= date(object.hireDate) ? "active" : "prehire"',
  } as RuleRequest;
  expect(await ruleErrors(computed, exists)).toEqual([]);
  const join = {
    ruleName: 'j',
    ruleType: 'JoinRule',
    connectorId: C,
    sourceAttribute: 'a',
    targetAttribute: 'b',
    transformScript: 'now() > date(source)',
  } as RuleRequest;
  expect(await ruleErrors(join, exists)).toEqual([
    { path: '/transformScript', message: 'now() can only be used in flow rules, computed attributes (MeshComposerRule) and provisioning conditions' },
  ]);
});
