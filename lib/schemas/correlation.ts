import { Type, type Static } from '@sinclair/typebox';
import { defineSchema } from '../core/validation/ajv';
import { Guid, Nullable, Timestamp } from '../core/validation/schemas';

/** Schemas of `/correlation-cases` and of the manual join/disconnect/undo of connector-space objects (docs/correlation.md). */

const Value = () =>
  Type.Unsafe<unknown>({
    description: 'An attribute value: a string, number, boolean, null, or an array of those.',
    anyOf: [{ type: ['string', 'number', 'boolean', 'null'] }, { type: 'array', items: { type: ['string', 'number', 'boolean', 'null'] } }],
  });
const Reason = () =>
  Type.Union([Type.Literal('noKey'), Type.Literal('severalCandidates'), Type.Literal('belowThreshold')], {
    description:
      '`noKey`: no exact join rule had a value; `severalCandidates`: more than one candidate; `belowThreshold`: one candidate scoring below autoJoinConfidence.',
  });
const Decision = () => Type.Union([Type.Literal('join'), Type.Literal('project'), Type.Literal('ignore')]);
export const CASE_STATES = ['open', 'decided', 'closed'] as const;
export const CASE_REASONS = ['noKey', 'severalCandidates', 'belowThreshold'] as const;

const Match = Type.Object(
  {
    ruleId: Guid(),
    ruleName: Type.String(),
    sourceAttribute: Type.String(),
    targetAttribute: Type.String(),
    how: Type.Union([Type.Literal('exact'), Type.Literal('normalized'), Type.Literal('fuzzy')]),
    similarity: Type.Number({ description: 'The name similarity of a fuzzy match (0..1); 1 for exact and normalised matches.' }),
    points: Type.Integer({ description: 'What the rule added to the score: its confidence, times the similarity for a fuzzy match.' }),
  },
  { additionalProperties: false },
);

export const CorrelationCase = defineSchema(
  Type.Object(
    {
      caseId: Guid({ description: "The case's id: the csObjectId of the connector object it is about (one case per object)." }),
      connectorId: Guid(),
      csObjectId: Guid(),
      object: Type.Object(
        {
          anchor: Type.String(),
          dn: Nullable(Type.String()),
          objectType: Type.String(),
          displayName: Type.String(),
          attributes: Type.Record(Type.String(), Value(), { description: 'The values the join rules read.' }),
        },
        { additionalProperties: false },
      ),
      candidates: Type.Array(
        Type.Object(
          {
            meshObjectId: Guid(),
            anchor: Type.String(),
            displayName: Type.String(),
            score: Type.Integer(),
            matched: Type.Array(Match),
          },
          { additionalProperties: false },
        ),
        { description: 'Best first (at most 20).' },
      ),
      reason: Reason(),
      state: Type.Union(
        CASE_STATES.map((s) => Type.Literal(s)),
        {
          description: '`open`: waiting for a decision; `decided`: an operator decided; `closed`: the rules settled it (a key arrived, the object went).',
        },
      ),
      decision: Nullable(Decision()),
      meshObjectId: Nullable(Guid({ description: 'The mesh object the object joined (a join decision, or the rules closing the case).' })),
      decidedBy: Nullable(Type.String()),
      decidedOn: Nullable(Timestamp()),
      openedOn: Timestamp(),
      updatedOn: Timestamp(),
    },
    { $id: 'CorrelationCase', additionalProperties: false },
  ),
);
export type CorrelationCaseView = Static<typeof CorrelationCase>;

export const CorrelationCaseList = defineSchema(
  Type.Object(
    { items: Type.Array(Type.Ref('CorrelationCase')), totalCount: Type.Integer({ minimum: 0 }) },
    { $id: 'CorrelationCaseList', additionalProperties: false, description: 'Ordered by connector, then when each case opened.' },
  ),
);

export const DecideCaseRequest = defineSchema(
  Type.Object(
    {
      decision: Decision(),
      meshObjectId: Type.Optional(
        Guid({ description: "With join: the mesh object to join (any mesh object, not only a candidate); default the case's best candidate." }),
      ),
    },
    { $id: 'DecideCaseRequest', additionalProperties: false },
  ),
);
export type DecideCaseBody = Static<typeof DecideCaseRequest>;

export const DecideCasesRequest = defineSchema(
  Type.Object(
    {
      filter: Type.Object(
        {
          connectorId: Type.Optional(Guid()),
          reason: Type.Optional(Reason()),
          minScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, description: "The best candidate's score at least this." })),
          maxCandidates: Type.Optional(Type.Integer({ minimum: 0, maximum: 20, description: 'At most this many candidates (1: cases with one candidate).' })),
        },
        { additionalProperties: false },
      ),
      decision: Decision(),
    },
    {
      $id: 'DecideCasesRequest',
      additionalProperties: false,
      description: 'Decide every open case the filter matches; join joins each to its best candidate (a case whose best score is tied is skipped).',
    },
  ),
);
export type DecideCasesBody = Static<typeof DecideCasesRequest>;

export const DecideCasesResult = defineSchema(
  Type.Object(
    {
      matched: Type.Integer({ minimum: 0 }),
      decided: Type.Integer({ minimum: 0 }),
      skipped: Type.Integer({ minimum: 0, description: 'Cases a join could not decide: no candidate, or a tie for the best.' }),
      failed: Type.Array(Type.Object({ caseId: Guid(), message: Type.String() }, { additionalProperties: false })),
    },
    { $id: 'DecideCasesResult', additionalProperties: false },
  ),
);
export type DecideCasesOutcome = Static<typeof DecideCasesResult>;

export const SpaceJoinRequest = defineSchema(
  Type.Object({ meshObjectId: Guid({ description: 'The mesh object to join.' }) }, { $id: 'SpaceJoinRequest', additionalProperties: false }),
);

export const CorrelationDecision = defineSchema(
  Type.Object(
    {
      csObjectId: Guid(),
      decision: Nullable(Type.Union([Decision()], { description: 'What an operator decided for the object; null after an undo (the rules decide).' })),
      meshObjectId: Nullable(Guid({ description: 'The mesh object the object is joined to now.' })),
      history: Type.Array(
        Type.Object(
          {
            action: Type.Union([Type.Literal('join'), Type.Literal('project'), Type.Literal('ignore'), Type.Literal('undo')]),
            meshObjectId: Nullable(Guid()),
            by: Type.String(),
            on: Timestamp(),
          },
          { additionalProperties: false },
        ),
        { description: "The object's decisions, oldest first (at most 50)." },
      ),
    },
    { $id: 'CorrelationDecision', additionalProperties: false },
  ),
);
export type CorrelationDecisionView = Static<typeof CorrelationDecision>;
