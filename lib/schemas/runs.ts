import { Type } from '@sinclair/typebox';
import { RUN_PHASES, RUN_STATUSES, RUN_TYPES, THRESHOLD_OPERATIONS } from '../storage/runs';
import { CHANGE_OPERATIONS, CHANGE_OUTCOMES, CHANGE_TARGETS } from '../storage/runChanges';
import { defineSchema } from '../core/validation/ajv';
import { Guid, Nullable, Timestamp } from '../core/validation/schemas';

/** Schemas of `/runs` (responses only: runs are started by the import/export triggers). */
const Count = (options: { description?: string } = {}) => Type.Integer({ minimum: 0, ...options });

export const RunSchema = defineSchema(
  Type.Object(
    {
      runId: Guid(),
      connectorId: Guid(),
      instanceId: Nullable(Type.String({ description: 'The engine instance that runs it.' })),
      instanceName: Nullable(Type.String({ description: "The instance's current name (kept current by renames)." })),
      runType: Type.Union(RUN_TYPES.map((t) => Type.Literal(t))),
      status: Type.Union(
        RUN_STATUSES.map((s) => Type.Literal(s)),
        {
          description:
            'Queued: its instance is paused. CompletedWithErrors: some objects failed (see errors). Failed: see error. Cancelled: cancelled through POST /runs/{id}/cancel, or its orchestration was terminated outside the engine (see error). AwaitingApproval: it would exceed a threshold of its connector; it applied nothing and waits for an Admin (POST /runs/{id}/approve or /reject; see approval), holding the connector. Rejected: an Admin rejected it, or its approval expired (see error); nothing was applied.',
        },
      ),
      startedAt: Timestamp(),
      completedAt: Type.Optional(Timestamp({ description: 'Present once the run has finished.' })),
      stats: Type.Object(
        {
          objectsProcessed: Count(),
          objectsCreated: Count(),
          objectsUpdated: Count({ description: 'Objects whose values changed (an export: objects changed in the target, each counted once).' }),
          objectsDeleted: Count(),
          errors: Count(),
          objectsUnchanged: Type.Optional(
            Count({
              description: 'Imports: objects read that were as the engine knew them (a confirming import reading back what an export wrote is unchanged).',
            }),
          ),
        },
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
          type: Type.Union([Type.Literal('manual'), Type.Literal('schedule'), Type.Literal('apply'), Type.Literal('due'), Type.Literal('continuous')], {
            description:
              "manual: started through the API by actorUpn; schedule: started by a schedule run; apply: the apply of a plan; due: an export started by the due timer for objects whose dated changes fell due; continuous: the connector's continuous mode (a batch of changes, a reconciling delta, or the export of a batch).",
          }),
          actorUpn: Nullable(Type.String({ description: 'Who started it: the caller (manual), `schedule:<name>` (schedule), `system:due` (due).' })),
          scheduleId: Type.Optional(Guid()),
          scheduleRunId: Type.Optional(Guid()),
          planRunId: Type.Optional(Guid()),
          reconcile: Type.Optional(Type.Boolean({ description: 'continuous: a reconciling delta import.' })),
          sourceRunId: Type.Optional(Guid({ description: 'continuous: the import run whose changes this Export run sends.' })),
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
          {
            additionalProperties: false,
            description: 'Present while the run is Running (refreshed with its stats at every page), and as it last was on a finished run.',
          },
        ),
      ),
      plan: Type.Optional(
        Type.Object(
          { expiresOn: Timestamp({ description: 'Until when POST /runs/{id}/apply applies it (Plans__ExpireHours, default 24).' }) },
          { additionalProperties: false, description: 'A completed dry run is a plan: its changes are listed with outcome planned.' },
        ),
      ),
      approval: Type.Optional(
        Type.Object(
          {
            reasons: Type.Array(
              Type.Object(
                {
                  operation: Type.Union(
                    THRESHOLD_OPERATIONS.map((o) => Type.Literal(o)),
                    { description: "The threshold's key." },
                  ),
                  count: Count(),
                  limit: Type.Integer({ minimum: 0, description: 'The number the count exceeded.' }),
                },
                { additionalProperties: false },
              ),
            ),
            requestedBy: Nullable(Type.String({ description: "Who triggered the run (its trigger's actor)." })),
            requester: Type.Optional(
              Nullable(
                Type.String({
                  description:
                    "The person the four-eyes rule holds as the run's requester (UPN, or application id): the caller of a manual run or an apply; for a schedule's run, who pressed run-now, or for a tick whoever changed the schedule, its connectors or their rules since its last approved run (null: nobody; any Admin may approve). That person, under any scheme or alias, cannot approve it.",
                }),
              ),
            ),
            expiresOn: Timestamp({ description: 'When the run is rejected if no Admin decided (Approvals__ExpireHours, default 24).' }),
          },
          { additionalProperties: false, description: 'Present on a run that exceeded a threshold: why it waits (or waited) for approval.' },
        ),
      ),
      approvedBy: Type.Optional(Type.String({ description: 'A run that waited for approval and was approved: who approved it (UPN, or application id).' })),
    },
    { $id: 'Run', additionalProperties: false },
  ),
);

export const RunList = defineSchema(Type.Object({ items: Type.Array(Type.Ref('Run')), totalCount: Count() }, { $id: 'RunList', additionalProperties: false }));

const ChangeValue = () =>
  Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null(), Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]))]);

export const RunChange = defineSchema(
  Type.Object(
    {
      target: Type.Union(
        CHANGE_TARGETS.map((t) => Type.Literal(t)),
        {
          description:
            "mesh: a change of a mesh object (imports, FullSync); connector: a change of an object in a target (exports; in an import's plan, what each target's export would then get).",
        },
      ),
      connectorId: Nullable(
        Type.String({
          description: "The connector of the item's connector-space object: the run's, or for a connector item of an import's plan, the target's.",
        }),
      ),
      operation: Type.Union(CHANGE_OPERATIONS.map((o) => Type.Literal(o))),
      csObjectId: Nullable(Guid({ description: 'The connector-space object.' })),
      meshObjectId: Nullable(Guid()),
      anchor: Nullable(Type.String()),
      dn: Nullable(Type.String({ description: 'null outside directories.' })),
      attributes: Type.Record(Type.String(), Type.Object({ old: ChangeValue(), new: ChangeValue() }, { additionalProperties: false }), {
        description: 'Attribute-level old and new values (secrets masked).',
      }),
      outcome: Type.Union(
        CHANGE_OUTCOMES.map((o) => Type.Literal(o)),
        { description: 'applied, planned (a dry run, a run awaiting approval), failed (see error), drifted (its inputs changed since the plan: not touched).' },
      ),
      error: Nullable(Type.String()),
    },
    { $id: 'RunChange', additionalProperties: false },
  ),
);

export const RunChangeList = defineSchema(
  Type.Object({ items: Type.Array(Type.Ref('RunChange')), totalCount: Count() }, { $id: 'RunChangeList', additionalProperties: false }),
);
