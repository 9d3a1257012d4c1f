import { candidateValues, normaliseValue, poolOf, uniqueRulesOf, basisOf } from '../../../../lib/sync/unique/candidates';
import { compileRuleSet } from '../../../../lib/sync/rules';
import type { Rule } from '../../../../lib/storage/rules';
import type { UniqueRule } from '../../../../lib/storage/uniqueValues';

const CID = 'c0000000-0000-4000-8000-00000000000c';
const unique = (over: Partial<UniqueRule> = {}): UniqueRule => ({
  candidates: [
    'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase()',
    'object.givenName.toLowerCase() + "." + object.sn.toLowerCase()',
    'object.givenName.substring(0, 1).toLowerCase() + object.sn.toLowerCase() + counter',
  ],
  scope: 'connector',
  counter: { from: 2, to: 4 },
  caseSensitive: false,
  keepOnRename: true,
  quarantineDays: 90,
  ...over,
});
const flow = (u: UniqueRule, over: Partial<Rule> = {}): Rule => ({
  ruleId: 'r1',
  ruleName: 'login',
  ruleType: 'FlowRule',
  direction: 'outbound',
  connectorId: CID,
  priority: 100,
  isEnabled: true,
  sourceAttribute: 'sn',
  targetAttribute: 'sAMAccountName',
  confidence: null,
  transformScript: null,
  unique: u,
  createdOn: '2026-01-01T00:00:00.000Z',
  updatedOn: '2026-01-01T00:00:00.000Z',
  ...over,
});
const scope = (object: Record<string, unknown>) => ({ source: object.sn, object, related: {} });

test('candidates are tried in order; one that reads counter once per counter value', () => {
  const [c] = uniqueRulesOf(compileRuleSet(CID, [flow(unique())]).outbound);
  const values = [...candidateValues(c, scope({ givenName: 'John', sn: 'Smith' }))];
  expect(values).toEqual([
    { candidate: 0, value: 'jsmith' },
    { candidate: 1, value: 'john.smith' },
    { candidate: 2, counter: 2, value: 'jsmith2' },
    { candidate: 2, counter: 3, value: 'jsmith3' },
    { candidate: 2, counter: 4, value: 'jsmith4' },
  ]);
  expect(basisOf(c, scope({ givenName: 'John', sn: 'Smith' }))).toBe('jsmith');
});

test('a candidate that gives nothing (empty, null, an object) is a null value; a failing one names the rule', () => {
  const [c] = uniqueRulesOf(compileRuleSet(CID, [flow(unique({ candidates: ['object.middle', '""', 'object.sn.toLowerCase()'] }))]).outbound);
  expect([...candidateValues(c, scope({ sn: 'Lee' }))].map((v) => v.value)).toEqual([null, null, 'lee']);
  const [bad] = uniqueRulesOf(compileRuleSet(CID, [flow(unique({ candidates: ['object.sn.toLowerCase()'] }), { ruleId: 'r2' })]).outbound);
  expect(() => [...candidateValues(bad, scope({ sn: null }))]).toThrow(/^Rule 'login' \(id r2\) on attribute 'sAMAccountName': /);
});

test('pools: per connector and attribute, shared by a targets list whatever the attribute, per mesh attribute', () => {
  expect(poolOf({ connectorId: CID, targetAttribute: 'sAMAccountName' }, unique())).toBe(`connector/${CID}/samaccountname`);
  const targets = unique({ scope: 'targets', connectorIds: ['b', 'a'] });
  expect(poolOf({ connectorId: 'a', targetAttribute: 'uid' }, targets)).toBe('targets/a,b');
  expect(poolOf({ connectorId: 'b', targetAttribute: 'sAMAccountName' }, targets)).toBe('targets/a,b');
  expect(poolOf({ connectorId: 'a', targetAttribute: 'mail' }, unique({ scope: 'mesh', meshAttribute: 'Mail' }))).toBe('mesh/mail');
});

test('values compare case-insensitively (unless the rule says otherwise) and in Unicode NFC', () => {
  expect(normaliseValue('JSmith', false)).toBe('jsmith');
  expect(normaliseValue('JSmith', true)).toBe('JSmith');
  expect(normaliseValue('Jose\u0301', false)).toBe(normaliseValue('Jos\u00e9', false));
});
