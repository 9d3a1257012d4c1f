import { Type, type Static } from '@sinclair/typebox';
import { CONNECTOR_TYPES } from '../connectors/registry';
import { TARGET_TYPES, VERSION_ACTIONS } from '../config/snapshots';
import { defineSchema } from '../core/validation/ajv';
import { DisplayName, Guid, Nullable, Timestamp } from '../core/validation/schemas';
import { requestFields as ruleFields } from './rules';
import { requestFields as scheduleFields } from './schedules';

/**
 * Schemas of `/config`: the history of connectors, rules and schedules, and the configuration document of export
 * and import. Beyond the schema, an import checks every connector, rule and schedule as their own create or
 * update does (lib/api/configImport.ts), each error under its place in the document (`/rules/3/connectorId`).
 */
const Snapshot = (description: string) => Nullable(Type.Object({}, { additionalProperties: true, description }));

export const ConfigVersion = defineSchema(
  Type.Object(
    {
      versionId: Guid(),
      timestamp: Timestamp(),
      actorUpn: Nullable(
        Type.String({ description: 'Who made the change (as in the audit log); `system:connectorDelete` for the rules of a deleted connector.' }),
      ),
      targetType: Type.Union(TARGET_TYPES.map((t) => Type.Literal(t))),
      targetId: Type.String(),
      action: Type.Union(VERSION_ACTIONS.map((a) => Type.Literal(a))),
      before: Snapshot('The target before the change (null for a create); a connector with its secrets as `********`.'),
      after: Snapshot('The target as the change left it (null for a delete); a connector with its secrets as `********`.'),
    },
    { $id: 'ConfigVersion', additionalProperties: false },
  ),
);

export const ConfigHistoryList = defineSchema(
  Type.Object(
    { items: Type.Array(Type.Ref('ConfigVersion')), totalCount: Type.Integer({ minimum: 0 }) },
    { $id: 'ConfigHistoryList', additionalProperties: false, description: 'Newest first.' },
  ),
);

const DocumentConnector = Type.Object(
  {
    id: Type.Optional(Guid({ description: 'Matched first; a new connector keeps it.' })),
    name: DisplayName({ description: 'Matched when the id matches no connector (case-insensitive).' }),
    type: Type.Union(CONNECTOR_TYPES.map((t) => Type.Literal(t))),
    config: Type.Object(
      {},
      { additionalProperties: true, description: 'As a connector create or update takes it; a secret as `********` keeps the stored value.' },
    ),
  },
  { additionalProperties: false },
);
const DocumentRule = Type.Object(
  { ruleId: Type.Optional(Guid({ description: 'Matched first; a new rule keeps it.' })), ...ruleFields },
  { additionalProperties: false },
);
const DocumentSchedule = Type.Object(
  { scheduleId: Type.Optional(Guid({ description: 'Matched first; a new schedule keeps it.' })), ...scheduleFields },
  { additionalProperties: false },
);

export const ConfigDocument = defineSchema(
  Type.Object(
    {
      formatVersion: Type.Literal(1),
      exportedOn: Type.Optional(Timestamp()),
      connectors: Type.Array(DocumentConnector, { maxItems: 1000 }),
      rules: Type.Array(DocumentRule, { maxItems: 10000 }),
      schedules: Type.Array(DocumentSchedule, { maxItems: 1000 }),
    },
    { $id: 'ConfigDocument', additionalProperties: false, description: 'The whole configuration: connectors (secrets as `********`), rules and schedules.' },
  ),
);
export type ConfigDocument = Static<typeof ConfigDocument>;

export const ConfigImportResult = defineSchema(
  Type.Object(
    {
      changes: Type.Array(
        Type.Object(
          {
            targetType: Type.Union(TARGET_TYPES.map((t) => Type.Literal(t))),
            targetId: Type.String(),
            name: Type.String(),
            action: Type.Union(['create', 'update', 'delete', 'unchanged'].map((a) => Type.Literal(a))),
            needsApproval: Type.Optional(
              Type.Array(Type.Object({}, { additionalProperties: true }), {
                description: 'The guard rails this change loosens (or the deletes over its threshold): the import waits for a second Admin (202).',
              }),
            ),
            fields: Type.Optional(
              Type.Array(
                Type.Object(
                  {
                    path: Type.String({ description: 'The changed field, as a JSON Pointer into the item (/config/host, /priority, /steps).' }),
                    before: Type.Unknown({ description: 'Its value before (null: not set). A secret is `********`.' }),
                    after: Type.Unknown({ description: 'Its value after (null: not set). A secret is `********`.' }),
                  },
                  { additionalProperties: false },
                ),
                { description: 'An update only: what changes in the item, field by field (an array is one field).' },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        { description: 'Every item of the document, then what prune deletes.' },
      ),
      applied: Type.Boolean({ description: 'False for a dry run.' }),
    },
    { $id: 'ConfigImportResult', additionalProperties: false },
  ),
);

/** A guard-rail reason (`setting`, `before`, `after`) or a threshold reason (`operation`, `count`, `limit`). */
const ChangeReason = Type.Object(
  {
    setting: Type.Optional(Type.String({ description: 'The loosened setting, as a path in the connector config (thresholds.deletes.count).' })),
    before: Type.Optional(Type.Unknown({ description: 'Its effective value before (null: not set).' })),
    after: Type.Optional(Type.Unknown({ description: 'Its value after the change (null: not set).' })),
    operation: Type.Optional(Type.String({ description: 'A forced delete over its threshold: deletes.' })),
    count: Type.Optional(Type.Integer()),
    limit: Type.Optional(Type.Integer()),
    connectorId: Type.Optional(Type.String()),
    connectorName: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const ConfigChange = defineSchema(
  Type.Object(
    {
      changeId: Guid(),
      status: Type.Union(['AwaitingApproval', 'Applied', 'Rejected', 'Expired', 'Failed'].map((s) => Type.Literal(s))),
      targetType: Type.String({ description: 'connector, rule, schedule, or config (an import).' }),
      targetId: Type.String({ description: 'The target id; `import` for an import.' }),
      targetName: Nullable(Type.String({ description: "The target's name when the change was asked; null for an import." })),
      action: Type.String({ description: 'create, update, delete, restore or import.' }),
      reasons: Type.Array(ChangeReason),
      requestedBy: Nullable(Type.String()),
      requestedOn: Timestamp(),
      expiresOn: Timestamp({ description: 'Approvals__ExpireHours after the request; then Expired, nothing applied.' }),
      decidedBy: Nullable(Type.String()),
      decidedOn: Nullable(Timestamp()),
      error: Nullable(Type.String({ description: 'Why it was not applied (rejected, expired, the target changed since).' })),
      changes: Type.Optional(
        Type.Array(
          Type.Object(
            {
              targetType: Type.String(),
              targetId: Type.String(),
              action: Type.String(),
              before: Snapshot('As before.'),
              after: Snapshot('As the change leaves it.'),
            },
            { additionalProperties: false },
          ),
          { description: 'The writes it makes when approved (secrets as `********`); in the detail, not the list.' },
        ),
      ),
    },
    { $id: 'ConfigChange', additionalProperties: false },
  ),
);

export const ConfigChangeList = defineSchema(
  Type.Object(
    { items: Type.Array(Type.Ref('ConfigChange')), totalCount: Type.Integer({ minimum: 0 }) },
    { $id: 'ConfigChangeList', additionalProperties: false },
  ),
);
