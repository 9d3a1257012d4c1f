import { readConnectorRow } from '../storage/connectors';
import { getRule } from '../storage/rules';
import { getSchedule } from '../storage/schedules';
import { connectorSnapshot, plainSnapshot, type Snapshot, type TargetType } from './snapshots';

/**
 * The target's stored state now, as a snapshot: null when it does not exist for readers (a connector being
 * deleted included).
 */
export async function currentSnapshot(targetType: TargetType, targetId: string): Promise<Snapshot | null> {
  if (targetType === 'connector') {
    const row = await readConnectorRow(targetId);
    return row && row.state === 'ready' ? connectorSnapshot(row) : null;
  }
  if (targetType === 'rule') {
    const rule = await getRule(targetId);
    return rule ? plainSnapshot(rule) : null;
  }
  const schedule = await getSchedule(targetId);
  return schedule ? plainSnapshot(schedule) : null;
}
