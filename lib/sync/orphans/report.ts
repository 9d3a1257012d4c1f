import { engineNow } from '../../core/clock';
import { existingMeshIds } from '../../mesh/store';
import { tombstoneDeletedOn } from '../../mesh/tombstones';
import { listOrphanKeeps } from '../../storage/orphanKeeps';
import { listRules } from '../../storage/rules';
import { listDecisions } from '../correlation/caseStore';
import type { CsObject } from '../model';
import { compileRuleSet } from '../rules';
import { settingsOf, type ExportConfig } from '../run/runConnector';
import { iterateCsObjects, loadCsSummaries, readCsObjects } from '../space/connectorSpace';
import { classifyOrphans, type Orphan } from './classify';

/** Candidates beyond this many are read by a pass over the whole connector space rather than one read each. */
const POINT_READS_MAX = 2000;

/** Whether the connector is an export target: it has an enabled outbound flow rule. */
export async function isExportTarget(connectorId: string): Promise<boolean> {
  return compileRuleSet(connectorId, await listRules()).outbound.length > 0;
}

/**
 * The orphans of a target connector now (see ./classify.ts), excluded ones included, in anchor order, and how
 * many objects (not deleted) its connector space holds. Reads the connector-space summaries (narrow columns),
 * asks the mesh which linked objects are live and which are tombstones, then reads the full rows of the
 * candidates only (attributes for the display name and the enabled state).
 */
export async function loadOrphans(connectorId: string, config: ExportConfig, now = engineNow()): Promise<{ orphans: Orphan[]; existing: number }> {
  const summaries = await loadCsSummaries(connectorId);
  let existing = 0;
  const linked: string[] = [];
  for (const s of summaries.values()) {
    if (s.deleted) continue;
    existing++;
    if (s.meshId) linked.push(s.meshId);
  }
  const live = await existingMeshIds(linked);
  const candidates: string[] = [];
  const notLive: string[] = [];
  for (const [anchor, s] of summaries) {
    if (s.deleted) continue;
    if (!s.meshId) {
      if (s.deprov !== 'disabled') candidates.push(anchor);
    } else if (!live.has(s.meshId)) {
      candidates.push(anchor);
      notLive.push(s.meshId);
    } else if (s.deprov === 'pending') candidates.push(anchor);
  }
  const [tombstones, decisions, keeps] = await Promise.all([tombstoneDeletedOn(notLive), listDecisions(connectorId), listOrphanKeeps(connectorId)]);
  const disconnected = new Map<string, { by: string; on: string }>();
  for (const d of decisions.values()) if (d.mode === 'ignore') disconnected.set(d.anchor, { by: d.by, on: d.on });
  const rows = await candidateRows(connectorId, candidates);
  const inputs = {
    live,
    tombstones,
    disconnected,
    keeps,
    settings: settingsOf(config),
    objectType: typeof config.objectType === 'string' ? config.objectType : 'User',
    now,
  };
  return { orphans: classifyOrphans(rows, inputs), existing };
}

async function candidateRows(connectorId: string, anchors: readonly string[]): Promise<CsObject[]> {
  if (anchors.length <= POINT_READS_MAX) return [...(await readCsObjects(connectorId, anchors)).values()];
  const wanted = new Set(anchors);
  const out: CsObject[] = [];
  for await (const page of iterateCsObjects(connectorId)) for (const row of page) if (wanted.has(row.anchor)) out.push(row);
  return out;
}
