import { listRules } from '../storage/rules';
import { compileRuleSet } from './rules';
import { readSyncState } from './run/state';

/**
 * Whether the rules of a connector changed since its last full pass (a full import or a FullSync that
 * completed): objects a delta does not read again were then processed with other rules, and a FullSync (or a
 * full import) is needed to bring them in line. False when no full pass was recorded yet.
 */
export async function fullSyncRequired(connectorId: string): Promise<boolean> {
  const [{ fullRulesHash }, rules] = await Promise.all([readSyncState(connectorId), listRules()]);
  return fullRulesHash !== null && fullRulesHash !== compileRuleSet(connectorId, rules).hash;
}

/** The note a delta import adds to its run (an entry of its errors that names no object) when the rules changed. */
export const RULES_CHANGED_NOTE =
  'The rules of this connector changed since its last full import or FullSync: objects this delta did not read were processed with the old rules. Run a FullSync (POST /connectors/{id}/import with runType FullSync), or set fullSyncOnRuleChange in the connector config to have deltas run it.';
