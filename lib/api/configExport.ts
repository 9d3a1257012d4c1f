import { maskedConfig } from '../config/snapshots';
import type { ConfigDocument } from '../schemas/config';
import { listConnectorRecords } from '../storage/connectors';
import { listRules } from '../storage/rules';
import { listSchedules } from '../storage/schedules';
import { ruleRequestOf, scheduleRequestOf } from './configHistory';

/**
 * `GET /config/export`: the whole configuration as one document, the form `POST /config/import` takes:
 * connectors (by name; secrets as `********`, never in clear), rules (by priority, then name), schedules (by
 * name), each with its id and the fields its create takes, without timestamps, so two exports of the same
 * configuration differ only in `exportedOn` (the document can be kept under version control).
 */
export async function exportConfig(): Promise<ConfigDocument & { exportedOn: string }> {
  const connectors = (await listConnectorRecords()).sort((a, b) => cmp(a.name.toLowerCase(), b.name.toLowerCase()) || cmp(a.id, b.id));
  return {
    formatVersion: 1,
    exportedOn: new Date().toISOString(),
    connectors: connectors.map((c) => ({ id: c.id, name: c.name, type: c.type as ConfigDocument['connectors'][number]['type'], config: maskedConfig(c) })),
    rules: (await listRules()).map((r) => ({ ruleId: r.ruleId, ...ruleRequestOf(r) })),
    schedules: (await listSchedules()).map((s) => ({ scheduleId: s.scheduleId, ...scheduleRequestOf(s) })),
  };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
