import type { Rule } from '../../../lib/storage/rules';

/** Connector ids of the sync unit tests: `A` a source (the rules' default), `B` another connector. */
export const A = '00000000-0000-4000-8000-00000000000a';
export const B = '00000000-0000-4000-8000-00000000000b';

/**
 * A rule builder for the sync unit tests: a flow rule of `connectorId` (default `A`) with the given fields. Each builder
 * numbers its rules from 1 (ids and names), so a test file that makes its own gets the same ids every run.
 */
export function ruleBuilder(connectorId = A): (partial: Partial<Rule>) => Rule {
  let n = 0;
  return (partial) => {
    n++;
    return {
      ruleId: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      ruleName: `rule${n}`,
      ruleType: 'FlowRule',
      connectorId,
      priority: 100,
      isEnabled: true,
      sourceAttribute: null,
      targetAttribute: null,
      confidence: null,
      transformScript: null,
      createdOn: '2026-01-01T00:00:00.000Z',
      updatedOn: '2026-01-01T00:00:00.000Z',
      ...partial,
    };
  };
}
