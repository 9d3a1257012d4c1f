import { Type, type Static, type TSchema } from '@sinclair/typebox';

/**
 * Building blocks shared by the resource schemas. None of these has an `$id`: they are embedded, and only
 * the top-level request/response schemas are registered (an embedded `$id` would be registered twice).
 */

/** A server-made id: a GUID, lower-case with dashes. */
export const Guid = (options: Record<string, unknown> = {}) =>
  Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', ...options });

/** ISO 8601 UTC with milliseconds and `Z`. */
export const Timestamp = (options: Record<string, unknown> = {}) => Type.String({ format: 'date-time', ...options });

/** A display name: 1..256 characters, not blank, no control characters. */
export const DisplayName = (options: Record<string, unknown> = {}) =>
  Type.String({ minLength: 1, maxLength: 256, pattern: '^(?=.*\\S)[^\\u0000-\\u001f\\u007f]+$', ...options });

/** An attribute or column name. */
export const AttributeName = (options: Record<string, unknown> = {}) =>
  Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001f\\u007f]+$', ...options });

/** `T` or null, as `type: [T, "null"]` (one error message for a wrong value, not one per union branch). */
export const Nullable = <T extends TSchema>(schema: T) =>
  typeof schema.type === 'string'
    ? Type.Unsafe<Static<T> | null>({ ...JSON.parse(JSON.stringify(schema)), type: [schema.type, 'null'] })
    : Type.Union([schema, Type.Null()]);

/** The `{ type, title, status, detail, instance, traceId, errors? }` body of every error (RFC 9457). */
export const ProblemDetailsSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.String(),
    traceId: Type.String(),
    code: Type.String({ description: 'The error code from the service catalog (validation_failed, not_found, conflict...).' }),
    errors: Type.Optional(
      Type.Array(Type.Object({ path: Type.String({ description: 'JSON pointer of the field, or the query parameter name.' }), message: Type.String() })),
    ),
    connectorSpaceObjects: Type.Optional(Type.Integer({ description: 'A connector delete refused (409): the objects its connector space holds.' })),
    meshObjects: Type.Optional(Type.Integer({ description: 'A connector delete refused (409): the mesh objects it contributes to.' })),
    tombstones: Type.Optional(
      Type.Integer({ description: 'A connector delete refused (409): the mesh objects it is the last contributor of (deleted with it).' }),
    ),
    schedules: Type.Optional(Type.Array(Type.String(), { description: 'A connector delete refused (409): the names of the schedules that run it.' })),
  },
  { $id: 'ProblemDetails', additionalProperties: false },
);

/**
 * A JSON object used as a dictionary: keys are checked with `propertyNames` (1..256 characters, never a key
 * that could reach an object prototype), every value with `value`.
 */
export const Dictionary = <T extends TSchema>(value: T, options: Record<string, unknown> = {}) =>
  Type.Unsafe<Record<string, Static<T>>>({
    type: 'object',
    propertyNames: { type: 'string', minLength: 1, maxLength: 256, not: { enum: ['__proto__', 'constructor', 'prototype'] } },
    additionalProperties: value,
    ...options,
  });

/**
 * A connector's deletion threshold (the older form of `thresholds.deletes`): a run that would delete more
 * objects than this deletes nothing and waits for an Admin's approval (status AwaitingApproval). A number is a
 * count of objects; an object sets the count and/or the share of the connector's objects. Default: 500 objects
 * or 20 %.
 */
export const DeletionThreshold = () =>
  Type.Union(
    [
      Type.Integer({ minimum: 0 }),
      Type.Object(
        { objects: Type.Optional(Type.Integer({ minimum: 0 })), percent: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })) },
        { additionalProperties: false },
      ),
    ],
    {
      description:
        'The older form of thresholds.deletes: a run that would delete more objects than this ({ objects, percent }) waits for approval; default 500 objects or 20 %.',
    },
  );

/** One threshold: a count, a percent of the connector's connector-space objects, or both (the smaller wins). */
const Threshold = () =>
  Type.Object(
    { count: Type.Optional(Type.Integer({ minimum: 0 })), percent: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })) },
    { additionalProperties: false },
  );

/**
 * A connector's thresholds per operation (docs/safety.md): a run whose changes of one operation exceed its
 * limit applies nothing and waits for an Admin's approval. Default `{ deletes: { count: 500, percent: 20 } }`.
 */
export const Thresholds = () =>
  Type.Object(
    {
      adds: Type.Optional(Threshold()),
      updates: Type.Optional(Threshold()),
      deletes: Type.Optional(Threshold()),
      renames: Type.Optional(Threshold()),
      blanks: Type.Optional(Threshold()),
    },
    {
      additionalProperties: false,
      description:
        'Per operation { count, percent } (percent of the connector space); a run over one waits for approval. blanks: updates that empty an attribute that had a value. Default { deletes: { count: 500, percent: 20 } }.',
    },
  );

/**
 * A connector's own four-eyes rule (docs/safety.md): `requireSecondPerson` overrides the global
 * `Approvals:RequireSecondPerson` for its runs' approvals and for changes to its guard rails. Turning it off is
 * itself a guard-rail change (a second Admin approves it while it is on).
 */
export const ConnectorApprovals = () =>
  Type.Object(
    {
      requireSecondPerson: Type.Optional(
        Type.Boolean({
          description:
            "true: a run of this connector that waits for approval, and a change that loosens its guard rails, need another Admin than who asked; false: not (itself a change that needs a second Admin). Absent: the service's Approvals__RequireSecondPerson.",
        }),
      ),
    },
    { additionalProperties: false },
  );

/**
 * A target connector's deprovisioning: what an export does with a target object whose mesh object went away
 * (or, with onConditionFalse, whose provisioning condition stopped holding). See docs/sync-engine.md.
 */
export const Deprovisioning = () =>
  Type.Object(
    {
      action: Type.Optional(
        Type.Union([Type.Literal('delete'), Type.Literal('disable'), Type.Literal('none')], {
          default: 'delete',
          description:
            'delete: the object is deleted in the target; disable: disableAttributes are written instead; none: the object is left as it is and unlinked.',
        }),
      ),
      disableAttributes: Type.Optional(
        Dictionary(Type.Unsafe<string | number | boolean>({ type: ['string', 'number', 'boolean'], maxLength: 4096 }), {
          minProperties: 1,
          maxProperties: 50,
          'x-attribute-values': true,
          description:
            'With action disable: the attributes and values that disable an object (connector-side names). Required except on active_directory, where the default sets bit 2 (ACCOUNTDISABLE) of the current userAccountControl. The value of a secret attribute (a password) is kept like a secret: never returned, `********` in a PUT keeps it.',
        }),
      ),
      graceDays: Type.Optional(
        Type.Number({
          minimum: 0,
          maximum: 3650,
          default: 0,
          description:
            'Days (fractions allowed) an object waits, from the export that first finds it due, before it is deprovisioned; a return inside them cancels it.',
        }),
      ),
      onConditionFalse: Type.Optional(
        Type.Boolean({ default: false, description: 'true: a provisioned object whose provisioningCondition stops holding is deprovisioned the same way.' }),
      ),
      orphanAction: Type.Optional(
        Type.Union([Type.Literal('disable'), Type.Literal('delete')], {
          default: 'disable',
          description:
            'What an orphan sweep (runType OrphanSweep) does with target accounts joined to no active identity: disable writes disableAttributes (a target with none refuses the sweep), delete deletes them.',
        }),
      ),
      deadlineMinutes: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 10080,
          default: 60,
          description:
            'Minutes a leaver may take, from when an import saw it (or its grace ended) to its delete or disable confirmed by an import of this target; past them it is late (GET /leavers, meshsync_leavers_late).',
        }),
      ),
    },
    { additionalProperties: false },
  );

/** A connector's choice to run a FullSync by itself after a delta import when its rules changed. */
export const FullSyncOnRuleChange = () =>
  Type.Boolean({
    description:
      'When the rules of the connector changed since its last full import or FullSync, a delta import goes on as a FullSync (default false: the run and the connector say that one is needed).',
  });

/** A connector's correlation settings: join rules score candidates and uncertain matches become cases (docs/correlation.md). */
export const Correlation = () =>
  Type.Object(
    {
      autoJoinConfidence: Type.Integer({
        minimum: 0,
        maximum: 1000,
        description: "The least score (the sum of the matching join rules' confidence) with which the one candidate reaching it joins.",
      }),
      caseOnMissingKey: Type.Optional(
        Type.Boolean({ description: 'An object without a value for any exact join rule opens a case even when nothing matches it (default false).' }),
      ),
    },
    { additionalProperties: false, description: "Turns scoring and correlation cases on for the connector's imports." },
  );

/** A source connector's continuous delta mode (docs/continuous.md). */
export const Continuous = () =>
  Type.Object(
    {
      enabled: Type.Boolean({ description: 'Follow the source: its changes are imported (and exported to the targets) as they happen.' }),
      intervalSeconds: Type.Optional(
        Type.Integer({ minimum: 1, maximum: 3600, default: 5, description: 'Seconds between two looks for changes (the short-interval delta).' }),
      ),
      reconcileMinutes: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 1440,
          default: 15,
          description: 'Minutes between two reconciling delta imports, run whether or not a change was seen; what it finds was missed by the stream.',
        }),
      ),
      stream: Type.Optional(
        Type.Union([Type.Literal('auto'), Type.Literal('off')], {
          description:
            "auto (when absent): keep the source's change stream open where the server offers one (syncrepl, persistent search, AD change notification), so a change is looked at at once; off: look every intervalSeconds only.",
        }),
      ),
    },
    { additionalProperties: false },
  );

/**
 * The fields every connector type's `config` carries beside its own settings: the provisioning condition, the
 * guard rails (deletion threshold, thresholds, approvals), deprovisioning, the full sync on a rule change and
 * correlation. Spread into each type's config schema.
 */
export const ConnectorPolicyFields = () => ({
  provisioningCondition: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'An expression over the mesh object attributes.' })),
  deletionThreshold: Type.Optional(DeletionThreshold()),
  thresholds: Type.Optional(Thresholds()),
  approvals: Type.Optional(ConnectorApprovals()),
  deprovisioning: Type.Optional(Deprovisioning()),
  fullSyncOnRuleChange: Type.Optional(FullSyncOnRuleChange()),
  correlation: Type.Optional(Correlation()),
});
