import { Type, type Static } from '@sinclair/typebox';
import { RUN_TYPES } from '../storage/runs';
import { SCHEDULE_RUN_STATUSES, STEP_STATUSES } from '../storage/schedules';
import { defineSchema } from '../core/validation/ajv';
import { DisplayName, Guid, Nullable, Timestamp } from '../core/validation/schemas';

/**
 * Schemas of `/schedules`. Beyond the schema, lib/api/schedules.ts checks the cron (NCRONTAB, at most once a
 * minute), the time zone (IANA) and that every connector exists, each error naming its field.
 */
const Count = () => Type.Integer({ minimum: 0 });
const RunTypeSchema = Type.Union(RUN_TYPES.map((t) => Type.Literal(t)));

const StepRequest = Type.Object(
  {
    runType: RunTypeSchema,
    connectorIds: Type.Array(Type.String({ maxLength: 64, description: 'A connector id (GUID); an unknown connector is a 400.' }), {
      minItems: 1,
      maxItems: 50,
      uniqueItems: true,
    }),
  },
  { additionalProperties: false, description: 'One step: a run of each connector, all started together and running in parallel.' },
);

export const requestFields = {
  name: DisplayName({ description: 'Unique, compared case-insensitively (409).' }),
  cron: Type.String({
    minLength: 1,
    maxLength: 256,
    description:
      'NCRONTAB as the Functions timer trigger: `{second} {minute} {hour} {day} {month} {day-of-week}`, or five fields (second 0). At most once a minute.',
  }),
  timeZone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'UTC', description: 'IANA time zone the cron is read in (default UTC).' })),
  isEnabled: Type.Optional(Type.Boolean({ default: true, description: 'A disabled schedule does not tick (nextRunOn null); run-now still works.' })),
  steps: Type.Array(StepRequest, { minItems: 1, maxItems: 20, description: 'Run in order; a step ends when all its runs end.' }),
  stopOnFailure: Type.Optional(Type.Boolean({ default: true, description: 'A Failed run ends the sequence as Failed (later steps are not started).' })),
};

export const CreateScheduleRequest = defineSchema(Type.Object(requestFields, { $id: 'CreateScheduleRequest', additionalProperties: false }));
export type ScheduleRequest = Static<typeof CreateScheduleRequest>;
export const UpdateScheduleRequest = defineSchema(
  Type.Object(requestFields, { $id: 'UpdateScheduleRequest', additionalProperties: false, description: 'The whole schedule (replaces it).' }),
);

export const ScheduleSchema = defineSchema(
  Type.Object(
    {
      scheduleId: Guid(),
      name: Type.String(),
      cron: Type.String({ description: 'As given (five fields stay five).' }),
      timeZone: Type.String(),
      isEnabled: Type.Boolean(),
      steps: Type.Array(Type.Object({ runType: RunTypeSchema, connectorIds: Type.Array(Guid()) }, { additionalProperties: false })),
      stopOnFailure: Type.Boolean(),
      disabledReason: Type.Optional(
        Type.String({ description: 'Why the service disabled the schedule (a forced delete of a connector it runs); gone once the schedule is saved again.' }),
      ),
      nextRunOn: Nullable(Timestamp({ description: 'The next tick; null while disabled.' })),
      lastRun: Nullable(
        Type.Object(
          { scheduleRunId: Guid(), status: Type.Union(SCHEDULE_RUN_STATUSES.map((s) => Type.Literal(s))), startedOn: Timestamp() },
          { additionalProperties: false, description: 'The newest schedule run (Skipped ones included).' },
        ),
      ),
      createdOn: Timestamp(),
      updatedOn: Timestamp(),
    },
    { $id: 'Schedule', additionalProperties: false },
  ),
);

export const ScheduleList = defineSchema(
  Type.Object({ items: Type.Array(Type.Ref('Schedule')), totalCount: Count() }, { $id: 'ScheduleList', additionalProperties: false }),
);

export const ScheduleRunSchema = defineSchema(
  Type.Object(
    {
      scheduleRunId: Guid(),
      scheduleId: Guid(),
      trigger: Type.Union([Type.Literal('schedule'), Type.Literal('manual')], {
        description: 'schedule: a tick of the cron; manual: POST /schedules/{id}/run.',
      }),
      status: Type.Union(
        SCHEDULE_RUN_STATUSES.map((s) => Type.Literal(s)),
        {
          description:
            'Skipped: the tick came while the previous schedule run was still going. Failed: a run Failed with stopOnFailure. CompletedWithErrors: some run did not end Completed.',
        },
      ),
      startedOn: Timestamp(),
      completedOn: Nullable(Timestamp()),
      steps: Type.Array(
        Type.Object(
          {
            runType: RunTypeSchema,
            status: Type.Union(
              STEP_STATUSES.map((s) => Type.Literal(s)),
              { description: 'NotStarted: not reached yet; NotRun: the sequence ended before it; Queued: its runs wait for a paused instance.' },
            ),
            runs: Type.Array(
              Type.Object(
                {
                  connectorId: Guid(),
                  runId: Nullable(Guid({ description: 'Null until started, and when the run could not start (status Failed).' })),
                  status: Type.String({
                    description:
                      "The run's status; NotStarted / NotRun before it starts or when it never did; Failed with runId null when it could not start (the connector had an active run, or is gone).",
                  }),
                },
                { additionalProperties: false },
              ),
            ),
          },
          { additionalProperties: false },
        ),
      ),
    },
    { $id: 'ScheduleRun', additionalProperties: false },
  ),
);

export const ScheduleRunList = defineSchema(
  Type.Object({ items: Type.Array(Type.Ref('ScheduleRun')), totalCount: Count() }, { $id: 'ScheduleRunList', additionalProperties: false }),
);
