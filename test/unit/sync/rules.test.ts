import { MeshIndex } from '../../../lib/mesh/joinIndex';
import { planImport, WorkingSet } from '../../../lib/sync/planner';
import { applyScript, compileRuleSet, RuleEvaluationError, ruleFailureMessage, ruleValue } from '../../../lib/sync/rules';
import { ExpressionEvaluationError } from '../../../lib/expression';
import type { Rule } from '../../../lib/storage/rules';

/** Per-object failures of a rule's script name the rule (name and id) and its attribute. */

const A = '00000000-0000-4000-8000-00000000000a';
const MAIL_RULE = '00000000-0000-4000-8000-000000000101';

function rule(partial: Partial<Rule>): Rule {
  return {
    ruleId: MAIL_RULE,
    ruleName: 'Mail to email',
    ruleType: 'FlowRule',
    connectorId: A,
    priority: 100,
    isEnabled: true,
    sourceAttribute: 'mail',
    targetAttribute: 'email',
    confidence: 50,
    transformScript: 'source.toLowerCase()',
    createdOn: '2026-01-01T00:00:00.000Z',
    updatedOn: '2026-01-01T00:00:00.000Z',
    ...partial,
  };
}

const compiled = (r: Rule) => {
  const set = compileRuleSet(A, [r]);
  return [...set.joins, ...set.projections, ...set.inbound, ...set.outbound, ...set.composers][0];
};

describe('applyScript', () => {
  it('throws a RuleEvaluationError naming the rule, its id and its attribute, wrapping the expression error', () => {
    let caught: unknown;
    try {
      applyScript(compiled(rule({})), null, {});
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RuleEvaluationError);
    const err = caught as RuleEvaluationError;
    expect(err.message).toBe(`Rule 'Mail to email' (id ${MAIL_RULE}) on attribute 'email': Cannot call 'toLowerCase' on null at line 1, column 7`);
    expect(err).toMatchObject({
      ruleId: MAIL_RULE,
      ruleName: 'Mail to email',
      attribute: 'email',
      reason: "Cannot call 'toLowerCase' on null at line 1, column 7",
    });
    expect(err.cause).toBeInstanceOf(ExpressionEvaluationError);
  });

  it('names the attribute a join or projection reads, and the one a computed attribute writes', () => {
    const message = (r: Partial<Rule>) => {
      try {
        applyScript(compiled(rule(r)), null, {});
      } catch (err) {
        return (err as Error).message;
      }
      return 'no error';
    };
    expect(message({ ruleType: 'JoinRule', ruleName: 'Join by uid', sourceAttribute: 'uid', targetAttribute: 'employeeId' })).toMatch(
      /^Rule 'Join by uid' \(id [-0-9a-f]+\) on attribute 'uid': /,
    );
    expect(
      message({ ruleType: 'ProjectionRule', ruleName: 'People', sourceAttribute: 'uid', targetAttribute: null, transformScript: 'object.kind.includes("p")' }),
    ).toMatch(/^Rule 'People' .* on attribute 'uid': Cannot call 'includes' on undefined/);
    expect(
      message({
        ruleType: 'MeshComposerRule',
        ruleName: 'Display',
        connectorId: null,
        sourceAttribute: null,
        targetAttribute: 'displayName',
        transformScript: 'source.sn.trim()',
      }),
    ).toMatch(/^Rule 'Display' .* on attribute 'displayName': /);
  });

  it("gives the script the other names of its scope (an outbound flow's related)", () => {
    const out = compiled(rule({ direction: 'outbound', transformScript: 'related.manager?.mail ?? source' }));
    expect(applyScript(out, 'self@x', {}, { related: { manager: { mail: 'boss@x' } } })).toBe('boss@x');
    expect(ruleValue(out, 'self@x', {}, { related: {} })).toBe('self@x');
    expect(() => applyScript(out, 'self@x', {})).toThrow(
      `Rule 'Mail to email' (id ${MAIL_RULE}) on attribute 'email': 'related' is not defined at line 1, column 1`,
    );
  });

  it('passes the value through when the rule has no script', () => {
    expect(applyScript(compiled(rule({ transformScript: null })), 'A@X', {})).toBe('A@X');
  });
});

describe('ruleValue', () => {
  it('a result that is not an attribute value fails naming the rule', () => {
    expect(() => ruleValue(compiled(rule({ transformScript: 'object' })), 'x', { a: 1 })).toThrow(
      `Rule 'Mail to email' (id ${MAIL_RULE}) on attribute 'email': The script produced an object`,
    );
    expect(ruleValue(compiled(rule({})), 'A@X', {})).toBe('a@x');
  });
});

describe('ruleFailureMessage', () => {
  it('gives a rule error as it is and prefixes anything else', () => {
    expect(ruleFailureMessage(new RuleEvaluationError(rule({}), new Error('boom')))).toBe(`Rule 'Mail to email' (id ${MAIL_RULE}) on attribute 'email': boom`);
    expect(ruleFailureMessage(new Error('boom'))).toBe('The rules could not be applied: boom');
    expect(ruleFailureMessage(new Error('boom'), 'The outbound rules could not be applied')).toBe('The outbound rules could not be applied: boom');
  });
});

describe('a run of the planner', () => {
  it('an inbound flow whose script fails gives a per-object error naming the rule and the attribute', () => {
    // Evaluated with the absent value too (by default an absent source is not evaluated).
    const rules = compileRuleSet(A, [
      rule({
        ruleId: '00000000-0000-4000-8000-000000000102',
        ruleName: 'People',
        ruleType: 'ProjectionRule',
        sourceAttribute: 'id',
        targetAttribute: null,
        transformScript: null,
      }),
      rule({ evaluateWhenAbsent: true }),
    ]);
    const ws = new WorkingSet(new MeshIndex(new Set()));
    const plan = planImport(
      { rules, now: '2026-02-01T00:00:00.000Z', ws },
      'p1',
      { anchor: 'p1', objectType: 'User', attributes: { id: 'p1', mail: null } },
      'h',
      undefined,
    );
    expect(plan.outcome).toBe('error');
    expect(plan.error).toContain(`Rule 'Mail to email' (id ${MAIL_RULE}) on attribute 'email': Cannot call 'toLowerCase' on null at line 1, column 7`);
    expect(plan.cs.error).toBe(plan.error);
  });

  it('an inbound flow whose source attribute is absent is not evaluated (no error, no contribution)', () => {
    const rules = compileRuleSet(A, [
      rule({
        ruleId: '00000000-0000-4000-8000-000000000102',
        ruleName: 'People',
        ruleType: 'ProjectionRule',
        sourceAttribute: 'id',
        targetAttribute: null,
        transformScript: null,
      }),
      rule({}),
    ]);
    const ws = new WorkingSet(new MeshIndex(new Set()));
    const plan = planImport(
      { rules, now: '2026-02-01T00:00:00.000Z', ws },
      'p1',
      { anchor: 'p1', objectType: 'User', attributes: { id: 'p1', mail: null } },
      'h',
      undefined,
    );
    expect(plan.outcome).toBe('created');
    expect(plan.error).toBeUndefined();
    expect(ws.get(plan.cs.meshId!)!.attributes.email).toBeUndefined();
  });
});
