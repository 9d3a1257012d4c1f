import { Type, type Static } from '@sinclair/typebox';
import { RULE_TYPES } from '../storage/rules';
import { defineSchema } from '../core/validation/ajv';
import { AttributeName, DisplayName, Guid, Nullable, Timestamp } from '../core/validation/schemas';
import { UniqueRuleSchema } from './uniqueRule';

/**
 * Request and response schemas of `/rules`. Which fields each rule type requires is checked after the
 * schema (lib/api/rules.ts), so that a missing field is reported by name:
 * - JoinRule: connectorId, sourceAttribute, targetAttribute.
 * - ProjectionRule: connectorId, sourceAttribute; optional objectType (default User) and transformScript (the
 *   condition).
 * - FlowRule: connectorId, sourceAttribute, targetAttribute; confidence when inbound (an outbound rule does not
 *   use it: left out, it is stored as null); optional direction (default inbound).
 * - MeshComposerRule: targetAttribute and transformScript (a computed attribute), or relationshipType and
 *   sourceAttribute (a relationship; targetAttribute then names the attribute the value is matched against);
 *   connectorId optional.
 * Fields of another type (direction, objectType, relationshipType) are a 400.
 */
const RuleTypeSchema = Type.Union(RULE_TYPES.map((t) => Type.Literal(t)));
const Script = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: 'An expression; `source` is the source value, `object` the attribute dictionary. Checked when saved: syntax, and no other names.',
});

export const requestFields = {
  ruleName: DisplayName(),
  ruleType: RuleTypeSchema,
  connectorId: Type.Optional(Nullable(Type.String({ description: 'The connector the rule belongs to (a GUID; an unknown connector is a 400).' }))),
  priority: Type.Optional(Type.Integer({ minimum: -1000000, maximum: 1000000, default: 100, description: 'Lower runs first.' })),
  isEnabled: Type.Optional(Type.Boolean({ default: true })),
  sourceAttribute: Type.Optional(Nullable(AttributeName())),
  targetAttribute: Type.Optional(Nullable(AttributeName())),
  confidence: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description: 'Required for an inbound FlowRule (ranks contributions); an outbound FlowRule does not use it (null when not given).',
      }),
    ),
  ),
  transformScript: Type.Optional(Nullable(Script)),
  direction: Type.Optional(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')], { description: 'FlowRule only; default inbound.' })),
  evaluateWhenAbsent: Type.Optional(
    Type.Boolean({
      description:
        'FlowRule only (false when not given): evaluate the script when the source attribute is absent (source is null). Default false: an absent source contributes nothing (inbound) or leaves the attribute out / clears it (outbound).',
    }),
  ),
  effectiveFromAttribute: Type.Optional(
    Nullable(
      AttributeName({
        description:
          'Inbound FlowRule only: the source attribute holding the date the value takes effect (ISO 8601, UTC unless it names a zone). Before that date the mesh keeps the previous value and the new one waits; the engine applies it on its date (docs/dated-changes.md).',
      }),
    ),
  ),
  objectType: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'ProjectionRule only; default User.' })),
  unique: Type.Optional(Nullable(UniqueRuleSchema)),
  relationshipType: Type.Optional(
    Nullable(Type.String({ minLength: 1, maxLength: 256, description: 'MeshComposerRule only: makes a relationship (e.g. manager).' })),
  ),
  match: Type.Optional(
    Type.Union([Type.Literal('exact'), Type.Literal('normalized'), Type.Literal('fuzzy')], {
      description: 'JoinRule only (default exact): how values are compared when the connector scores candidates (correlation).',
    }),
  ),
  fuzzyThreshold: Type.Optional(
    Type.Number({ minimum: 0, maximum: 1, description: 'JoinRule with match fuzzy only (default 0.9): the least name similarity that makes a candidate.' }),
  ),
};

export const CreateRuleRequest = defineSchema(Type.Object(requestFields, { $id: 'CreateRuleRequest', additionalProperties: false }));
export type RuleRequest = Static<typeof CreateRuleRequest>;

export const UpdateRuleRequest = defineSchema(
  Type.Object(requestFields, { $id: 'UpdateRuleRequest', additionalProperties: false, description: 'The whole rule (replaces it); ruleType cannot change.' }),
);

const listFields = {
  ruleId: Guid(),
  ruleName: Type.String(),
  ruleType: RuleTypeSchema,
  connectorId: Nullable(Guid()),
  priority: Type.Integer(),
  isEnabled: Type.Boolean(),
};

export const Rule = defineSchema(
  Type.Object(
    {
      ...listFields,
      sourceAttribute: Nullable(Type.String()),
      targetAttribute: Nullable(Type.String()),
      confidence: Nullable(Type.Integer()),
      transformScript: Nullable(Type.String()),
      direction: Type.Optional(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')])),
      evaluateWhenAbsent: Type.Optional(Type.Boolean()),
      unique: Type.Optional(UniqueRuleSchema),
      effectiveFromAttribute: Type.Optional(Type.String()),
      objectType: Type.Optional(Type.String()),
      relationshipType: Type.Optional(Nullable(Type.String())),
      match: Type.Optional(Type.Union([Type.Literal('exact'), Type.Literal('normalized'), Type.Literal('fuzzy')])),
      fuzzyThreshold: Type.Optional(Type.Number()),
      createdOn: Timestamp(),
      updatedOn: Timestamp(),
    },
    { $id: 'Rule', additionalProperties: false },
  ),
);

export const RuleList = defineSchema(
  Type.Object(
    { items: Type.Array(Type.Ref('Rule')), totalCount: Type.Integer({ minimum: 0 }) },
    { $id: 'RuleList', additionalProperties: false, description: 'Ordered by priority, then ruleName, then ruleId.' },
  ),
);
