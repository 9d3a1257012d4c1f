import { ruleErrors, toRule } from '../../../lib/api/rules';
import { schemaErrors } from '../../../lib/core/validation/ajv';
import { CreateRuleRequest, type RuleRequest } from '../../../lib/schemas/rules';

/** The correlation fields of a JoinRule (docs/correlation.md): `match` and `fuzzyThreshold`, checked and stored. */

const C = '3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b';
const join = (extra: Partial<RuleRequest> = {}): RuleRequest => ({
  ruleName: 'by name',
  ruleType: 'JoinRule',
  connectorId: C,
  sourceAttribute: 'displayName',
  targetAttribute: 'displayName',
  confidence: 60,
  ...extra,
});
const exists = async () => true;
const NOW = '2026-11-29T00:00:00.000Z';

describe('JoinRule match and fuzzyThreshold', () => {
  test('a fuzzy rule is stored with its threshold (0.9 by default); an exact one without either field', async () => {
    expect(await ruleErrors(join({ match: 'fuzzy', fuzzyThreshold: 0.85 }), exists)).toEqual([]);
    expect(toRule('r1', join({ match: 'fuzzy', fuzzyThreshold: 0.85 }), NOW, NOW)).toMatchObject({ match: 'fuzzy', fuzzyThreshold: 0.85 });
    expect(toRule('r1', join({ match: 'fuzzy' }), NOW, NOW)).toMatchObject({ match: 'fuzzy', fuzzyThreshold: 0.9 });
    expect(toRule('r1', join({ match: 'normalized' }), NOW, NOW).fuzzyThreshold).toBeUndefined();
    const plain = toRule('r1', join(), NOW, NOW);
    expect('match' in plain || 'fuzzyThreshold' in plain).toBe(false);
  });

  test('refused: another rule type, a threshold without fuzzy, a threshold out of 0..1, an unknown match', async () => {
    const flow = { ...join(), ruleType: 'FlowRule' as const, match: 'fuzzy' as const };
    expect(await ruleErrors(flow, exists)).toEqual(expect.arrayContaining([{ path: '/match', message: 'applies only to a JoinRule' }]));
    expect(await ruleErrors(join({ match: 'normalized', fuzzyThreshold: 0.8 }), exists)).toEqual([
      { path: '/fuzzyThreshold', message: 'applies only with match fuzzy' },
    ]);
    expect(schemaErrors(CreateRuleRequest, join({ match: 'fuzzy', fuzzyThreshold: 1.5 }))).toEqual([expect.objectContaining({ path: '/fuzzyThreshold' })]);
    expect(schemaErrors(CreateRuleRequest, { ...join(), match: 'soundex' }).length).toBeGreaterThan(0);
    expect(schemaErrors(CreateRuleRequest, join({ match: 'fuzzy', fuzzyThreshold: 0.9 }))).toEqual([]);
  });
});
