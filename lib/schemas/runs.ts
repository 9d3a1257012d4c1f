import { Type } from '@sinclair/typebox';
import { RUN_PHASES, RUN_STATUSES, RUN_TYPES } from '../storage/runs';
import { defineSchema } from '../core/validation/ajv';
import { Guid, Nullable, Timestamp } from '../core/validation/schemas';

/** Schemas of `/runs` (responses only: runs are started by the import/export triggers). */
const Count = () => Type.Integer({ minimum: 0 });

export const RunSchema = defineSchema(
  Type.Object(
    {
      runId: Guid(),
      connectorId: Guid(),
      instanceId: Nullable(Type.String({ description: 'The engine instance that runs it.' })),
      instanceName: Nullable(Type.String({ description: "The instance's current name (kept current by renames)." })),
      runType: Type.Union(RUN_TYPES.map((t) => Type.Literal(t))),
      status: Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)), {
        description: 'Queued: its instance is paused. CompletedWithErrors: some objects failed (see errors). Failed: see error. StoppedDeletionThreshold: it would have deleted more than the configured share of objects. Cancelled: cancelled through POST /runs/{id}/cancel, or its orchestration was terminated outside the engine (see error).',
      }),
      startedAt: Timestamp(),
      completedAt: Type.Optional(Timestamp({ description: 'Present once the run has finished.' })),
      stats: Type.Object(
        { objectsProcessed: Count(), objectsCreated: Count(), objectsUpdated: Count(), objectsDeleted: Count(), errors: Count() },
        { additionalProperties: false },
      ),
      errors: Type.Optional(
        Type.Array(Type.Object({ object: Type.Optional(Type.String()), message: Type.String() }, { additionalProperties: false }), {
          maxItems: 100,
          description: 'The first 100 per-object errors.',
        }),
      ),
      error: Type.Optional(Type.String({ description: 'Why the run failed or stopped.' })),
      dryRun: Type.Optional(Type.Boolean()),
      trigger: Type.Object(
        {
          type: Type.Union([Type.Literal('manual'), Type.Literal('schedule'), Type.Literal('apply')], { description: 'manual: started through the API by actorUpn; schedule: started by a schedule run; apply: the apply of a plan.' }),
          actorUpn: Nullable(Type.String({ description: 'Who started it: the caller (manual), `schedule:<name>` (schedule).' })),
          scheduleId: Type.Optional(Guid()),
          scheduleRunId: Type.Optional(Guid()),
          planRunId: Type.Optional(Guid()),
        },
        { additionalProperties: false },
      ),
      progress: Type.Optional(
        Type.Object(
          {
            phase: Type.Union(RUN_PHASES.map((p) => Type.Literal(p))),
            objectsProcessed: Count(),
            objectsTotal: Nullable(Type.Integer({ minimum: 0, description: 'Null when not known in advance.' })),
            updatedOn: Timestamp(),
          },
          { additionalProperties: false, description: 'Present while the run is Running (refreshed with its stats at every page), and as it last was on a finished run.' },
        ),
      ),
    },
    { $id: 'Run', additionalProperties: false },
  ),
);

export const RunList = defineSchema(
  Type.Object({ items: Type.Array(Type.Ref('Run')), totalCount: Count() }, { $id: 'RunList', additionalProperties: false }),
);
