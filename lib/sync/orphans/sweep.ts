import { ConnectorError, hasExport } from '../../connectors/sdk';
import { engineNow } from '../../core/clock';
import { getConnectorRecord } from '../../storage/connectors';
import { applyGone, type GonePlan } from '../export/exportDeletes';
import { ExportRetry } from '../export/exportRetry';
import { settingsOf, withConnector, type ExportConfig } from '../run/runConnector';
import { failure, type RunInfo, type RunTotals, type StepFailure } from '../run/runTypes';
import { sweepRefusal, sweepTargets } from './classify';
import { isExportTarget, loadOrphans } from './report';

/**
 * An orphan sweep run's step (runType `OrphanSweep`, docs/orphans.md): the target's orphans that are not
 * excluded are disabled with the target's `deprovisioning.disableAttributes` (or deleted, with
 * `deprovisioning.orphanAction: "delete"`), through the export's own deprovisioning apply: the deletes threshold
 * before any delete, a dry run that plans, an approved or applied plan that applies only what it planned, the
 * changes list, refused changes retried by later runs. A disabled orphan is unlinked with a marker (`orphan`)
 * and its join keys, so a person who later joins it re-enables it.
 */
export async function sweepOrphans(info: RunInfo, totals: RunTotals, config: ExportConfig): Promise<RunTotals | StepFailure> {
  try {
    const settings = settingsOf(config);
    const refused = sweepRefusal((await getConnectorRecord(info.connectorId)).name, settings, await isExportTarget(info.connectorId));
    if (refused) return { failed: refused };
    return await withConnector(info.connectorId, async (connector) => {
      if (!hasExport(connector)) throw new ConnectorError('unsupported', 'This connector cannot export.');
      const at = engineNow();
      const { orphans, existing } = await loadOrphans(info.connectorId, config, at);
      const retry = ExportRetry.forRows(info, at.toISOString());
      const rows = sweepTargets(orphans, settings).filter((row) => !retry.skipRow(row));
      // Nothing to sweep: nothing to write (the run completes with no change).
      if (!rows.length) return retry.note(totals);
      const plan: GonePlan = {
        deletes: settings.orphanAction === 'delete' ? rows : [],
        disables: settings.orphanAction === 'disable' ? rows : [],
        left: [],
        marks: [],
        lapsed: [],
      };
      return applyGone(connector, info, totals, config, plan, existing, { retry, at, reason: 'orphan' });
    });
  } catch (err) {
    return failure(err);
  }
}
