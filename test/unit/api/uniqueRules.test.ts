import { toUniqueRule, uniqueErrors } from '../../../lib/api/uniqueRules';
import type { RuleRequest } from '../../../lib/schemas/rules';

const A = 'a0000000-0000-4000-8000-00000000000a';
const B = 'b0000000-0000-4000-8000-00000000000b';
const body = (unique: RuleRequest['unique'], over: Partial<RuleRequest> = {}): RuleRequest => ({
  ruleName: 'login',
  ruleType: 'FlowRule',
  direction: 'outbound',
  connectorId: A,
  sourceAttribute: 'sn',
  targetAttribute: 'uid',
  unique,
  ...over,
});

test('each candidate is parsed and may read source, object, related and counter only', () => {
  expect(uniqueErrors(body({ candidates: ['object.sn + counter', 'related.manager.uid'] }))).toEqual([]);
  const errors = uniqueErrors(body({ candidates: ['object.sn +', 'coutner'] }));
  expect(errors.map((e) => e.path)).toEqual(['/unique/candidates/0', '/unique/candidates/1']);
  expect(errors[0].message).toMatch(/^does not parse/);
  expect(errors[1].message).toMatch(/'coutner' is not defined .*did you mean 'counter'/);
});

test('only an outbound FlowRule; counter bounds; connectorIds with scope targets only, meshAttribute with scope mesh only', () => {
  expect(uniqueErrors(body({ candidates: ['source'] }, { direction: 'inbound' }))).toEqual([
    { path: '/unique', message: 'applies only to an outbound FlowRule or a computed attribute (MeshComposerRule)' },
  ]);
  expect(uniqueErrors(body({ candidates: ['source'], counter: { from: 5, to: 2 } }))).toEqual([
    { path: '/unique/counter', message: 'from must not be greater than to' },
  ]);
  expect(uniqueErrors(body({ candidates: ['source'], counter: { from: 0, to: 5000 } }))[0].path).toBe('/unique/counter');
  expect(uniqueErrors(body({ candidates: ['source'], connectorIds: [B] })).map((e) => e.path)).toEqual(['/unique/connectorIds']);
  expect(uniqueErrors(body({ candidates: ['source'], scope: 'targets' })).map((e) => e.path)).toEqual(['/unique/connectorIds']);
  expect(uniqueErrors(body({ candidates: ['source'], scope: 'targets', connectorIds: ['nope'] })).map((e) => e.path)).toEqual(['/unique/connectorIds/0']);
  expect(uniqueErrors(body({ candidates: ['source'], meshAttribute: 'mail' })).map((e) => e.path)).toEqual(['/unique/meshAttribute']);
  expect(uniqueErrors(body(null))).toEqual([]);
});

test('stored with its defaults; a targets list includes the rule own connector, sorted, lower-case', () => {
  expect(toUniqueRule(body({ candidates: ['source'] }))).toEqual({
    candidates: ['source'],
    scope: 'connector',
    counter: { from: 2, to: 99 },
    caseSensitive: false,
    keepOnRename: true,
    quarantineDays: 90,
  });
  expect(toUniqueRule(body({ candidates: ['source'], scope: 'targets', connectorIds: [B.toUpperCase()] }))?.connectorIds).toEqual([A, B]);
  expect(toUniqueRule(body({ candidates: ['source'], scope: 'mesh' }))?.meshAttribute).toBe('uid');
});

test('a computed attribute (MeshComposerRule): scope mesh by default, or targets; candidates read source, object and counter', () => {
  const computed = (unique: RuleRequest['unique'], over: Partial<RuleRequest> = {}) =>
    body(unique, { ruleType: 'MeshComposerRule', direction: undefined, connectorId: null, sourceAttribute: null, ...over });
  expect(uniqueErrors(computed({ candidates: ['object.sn + counter'] }))).toEqual([]);
  expect(toUniqueRule(computed({ candidates: ['source.sn'] }))).toMatchObject({ scope: 'mesh', meshAttribute: 'uid' });
  expect(toUniqueRule(computed({ candidates: ['source.sn'], scope: 'targets', connectorIds: [B] }, { connectorId: A }))?.connectorIds).toEqual([B]);
  const related = uniqueErrors(computed({ candidates: ['related.manager.uid'] }));
  expect(related.map((e) => e.path)).toEqual(['/unique/candidates/0']);
  expect(related[0].message).toMatch(/'related' is not defined/);
  expect(uniqueErrors(computed({ candidates: ['source.sn'], scope: 'connector' }))).toEqual([
    { path: '/unique/scope', message: "must be 'mesh' or 'targets' for a computed attribute" },
  ]);
  expect(uniqueErrors(computed({ candidates: ['source.sn'] }, { relationshipType: 'manager' }))).toEqual([
    { path: '/unique', message: 'applies only to an outbound FlowRule or a computed attribute (MeshComposerRule)' },
  ]);
});
