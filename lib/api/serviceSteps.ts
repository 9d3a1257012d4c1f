import { authenticationStep } from '../auth/serviceStep';
import { checkFileRootsSetting } from '../connectors/file';
import { engineInstanceStep } from '../instances/instances';
import { historyPurgeStep } from '../mesh/historyPurge';
import { tombstonePurgeStep } from '../mesh/tombstonePurge';
import { meshReadModelStep } from '../mesh/readModel';
import { joinIndexPreloadStep } from '../sync/run/preload';
import { feedTrimStep } from '../sync/run/feedTrim';
import type { ServiceStep } from '../core/service';
import { startSecrets } from '../secrets';
import { listPendingOperations } from '../storage/operations';
import { resumeConnectorDeletes } from './connectorDelete';
import { readLicense } from './license';
import { areaLog } from '../core/log';
import { telemetryConfig } from '../telemetry/config';
import { setEngineStateSource } from '../telemetry/metrics';
import { startTracing, stopTracing } from '../telemetry/tracing';
import { readEngineState } from './engineGauges';
import { readSchedulesConfig } from '../schedules/config';
import { reconcileMinuteMs } from '../schedules/continuous';
import { readExportMaxAttempts, readIdleCsCaches } from '../core/config';
import { configureClock } from '../core/clock';
import { readExportOrderedMax } from '../sync/export/exportRun';
import { readSecretAttributes, useSecretAttributes } from '../core/secretAttributes';
import { readDisplayAttributes, useDisplayAttributes } from '../mesh/displayName';
import { readPlanSettings } from '../plans/settings';

const log = areaLog('api');

/**
 * The Admin API's own start steps (listed with the others in SERVICE_STEPS below):
 * - `secrets`: load the secrets key; outside Development a missing `Secrets:Key` stops the start.
 * - `license`: read the `License:*` settings, so a malformed one stops the start naming it.
 * - `fileRoots`: read `Connectors:File:Roots` (a malformed value or a missing folder stops the start naming
 *   the setting); unset, the default root under the data folder is created.
 * - `exportSettings`: read `Export:MaxAttempts`, `Export:OrderedMax` and `Sync:IdleConnectorSpaceCaches`, so a malformed value stops
 *   the start naming it.
 * - `planSettings`: read `Plans:ExpireHours`, `Approvals:ExpireHours` and `Approvals:RequireSecondPerson` likewise.
 * - `secretAttributes`: read `Mesh:SecretAttributes`, the attributes whose values are masked, likewise.
 * - `meshHistoryPurge` (lib/mesh/historyPurge.ts): read `Mesh:HistoryRetentionDays` (a malformed value stops
 *   the start naming it) and purge older mesh history in the background.
 * - `meshFeedTrim` (lib/sync/run/feedTrim.ts): read `Mesh:FeedRetentionMinutes`, `Mesh:FeedExportRetentionDays` and
 *   `Mesh:FeedTrimSeconds` (a malformed value stops the start naming it) and trim the mesh change feed in the background.
 * - `pendingOperations`: finish what a crash left half-done (connector deletes). A storage failure here is
 *   logged and does not stop the start: the next start tries again, and readers already see the outcome.
 */
/**
 * `telemetry`: read the `Metrics:*` settings and `OTEL_EXPORTER_OTLP_ENDPOINT` (a malformed one stops the
 * start naming it), start tracing when the endpoint is set, and give the metrics' state gauges their source.
 * First to start, so last to stop: the spans of everything else's stop are sent before it ends.
 */
export const telemetryStep: ServiceStep = {
  name: 'telemetry',
  async start() {
    const { otlpEndpoint, stateMaxAgeSeconds } = telemetryConfig();
    if (otlpEndpoint) {
      startTracing(otlpEndpoint);
      log.info(`Tracing on: spans go to the OTLP/HTTP collector at ${otlpEndpoint.host}.`);
    }
    setEngineStateSource(readEngineState, stateMaxAgeSeconds * 1000);
  },
  async stop() {
    setEngineStateSource(undefined);
    await stopTracing();
  },
};

export const secretsStep: ServiceStep = { name: 'secrets', start: startSecrets };

export const licenseStep: ServiceStep = {
  name: 'license',
  async start() {
    readLicense();
  },
};

export const fileRootsStep: ServiceStep = {
  name: 'fileRoots',
  async start() {
    checkFileRootsSetting();
  },
};

/** `schedules`: read the `Schedules:*` settings and the continuous test hook, so a malformed one stops the start naming it. */
export const schedulesConfigStep: ServiceStep = {
  name: 'schedules',
  async start() {
    readSchedulesConfig();
    reconcileMinuteMs();
  },
};

/** `exportSettings`: read `Export:MaxAttempts`, `Export:OrderedMax` and `Sync:IdleConnectorSpaceCaches`, so a malformed one stops the start naming it. */
export const exportSettingsStep: ServiceStep = {
  name: 'exportSettings',
  async start() {
    readExportMaxAttempts();
    readIdleCsCaches();
    readExportOrderedMax();
  },
};

/**
 * `engineClock` (lib/core/clock.ts): read the test-only `Testing:ClockOffsetFile`; set outside Development, the
 * start stops naming it.
 */
export const engineClockStep: ServiceStep = {
  name: 'engineClock',
  async start() {
    configureClock();
  },
};

/** `planSettings`: read `Plans:ExpireHours` and `Approvals:*`, so a malformed one stops the start naming it. */
export const planSettingsStep: ServiceStep = {
  name: 'planSettings',
  async start() {
    readPlanSettings();
  },
};

/**
 * `secretAttributes`: read and compile `Mesh:SecretAttributes` (lib/core/secretAttributes.ts) and
 * `Mesh:DisplayAttributes` (lib/mesh/displayName.ts) once, so a
 * malformed entry stops the start naming it and every read masks with the same list.
 */
export const secretAttributesStep: ServiceStep = {
  name: 'secretAttributes',
  async start() {
    useSecretAttributes(readSecretAttributes());
    useDisplayAttributes(readDisplayAttributes());
  },
};

export const pendingOperationsStep: ServiceStep = {
  name: 'pendingOperations',
  async start() {
    try {
      const finished = await resumeConnectorDeletes(await listPendingOperations());
      if (finished) log.info(`Finished ${finished} connector delete(s) left pending by an earlier run.`);
    } catch (err) {
      log.error(`Pending operations could not be resumed (${(err as Error).name}: ${(err as Error).message}); the next start retries.`);
    }
  },
};

/**
 * Every start step of the service, in the order they start (they stop in reverse), run by functions/startup.ts:
 * first telemetry (so it stops last), the settings that must stop a bad start with a message naming them, then authentication, this
 * process's engine instance, the work a crash left half-done, and last the mesh read model, whose first scan
 * of the mesh the join index taps (so the index's step comes before it), and the change feed's trim, which
 * writes this process's hold from the read model's position (so it stops first, writing it once more).
 */
export const SERVICE_STEPS: readonly ServiceStep[] = [
  telemetryStep,
  secretsStep,
  licenseStep,
  fileRootsStep,
  schedulesConfigStep,
  exportSettingsStep,
  engineClockStep,
  planSettingsStep,
  secretAttributesStep,
  historyPurgeStep,
  tombstonePurgeStep,
  authenticationStep,
  engineInstanceStep,
  pendingOperationsStep,
  joinIndexPreloadStep,
  meshReadModelStep,
  feedTrimStep,
];
