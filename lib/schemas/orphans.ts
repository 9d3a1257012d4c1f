import { Type } from '@sinclair/typebox';
import { defineSchema } from '../core/validation/ajv';
import { Guid, Nullable, Timestamp } from '../core/validation/schemas';

/** Schemas of the orphan report and keep marks (docs/orphans.md). */
export const OrphanExclusion = defineSchema(
  Type.Object(
    {
      reason: Type.Union([Type.Literal('explicitDisconnector'), Type.Literal('keep')], {
        description: 'explicitDisconnector: an operator disconnected it (the correlation disconnect); keep: an Admin marked it to keep.',
      }),
      by: Type.String(),
      on: Type.String({ description: 'When the decision or the mark was made (ISO 8601).' }),
      note: Nullable(Type.String()),
    },
    { $id: 'OrphanExclusion', additionalProperties: false },
  ),
);

export const Orphan = defineSchema(
  Type.Object(
    {
      csObjectId: Guid(),
      anchor: Type.String(),
      dn: Nullable(Type.String()),
      objectType: Type.String(),
      displayName: Type.String({
        description: 'From the object\u2019s attributes as last imported (Mesh__DisplayAttributes; never a secret); else its anchor.',
      }),
      reason: Type.Union([Type.Literal('disconnector'), Type.Literal('tombstone'), Type.Literal('overdue'), Type.Literal('gone')], {
        description:
          'disconnector: joined to no mesh object; tombstone: joined to a deleted mesh object whose grace is over; overdue: its deprovisioning is past due; gone: joined to a mesh object that no longer exists.',
      }),
      meshObjectId: Nullable(Guid({ description: 'The mesh object it is joined to (a tombstone or a gone one); null for a disconnector.' })),
      since: Type.String({ description: 'Since when it is an orphan, as far as the engine knows (ISO 8601).' }),
      targetState: Type.Union([Type.Literal('enabled'), Type.Literal('disabled'), Type.Literal('unknown')], {
        description:
          "Enabled or disabled in the target as last imported (the target's disable values, AD's userAccountControl); unknown: the target has no disable values to compare.",
      }),
      lastImportedOn: Nullable(Timestamp()),
      excluded: Nullable(Type.Ref('OrphanExclusion')),
    },
    { $id: 'Orphan', additionalProperties: false },
  ),
);

export const OrphanList = defineSchema(
  Type.Object(
    {
      items: Type.Array(Type.Ref('Orphan')),
      totalCount: Type.Integer({ minimum: 0 }),
      sweepable: Type.Integer({ minimum: 0, description: 'How many of all the orphans (not only this page) a sweep would change now.' }),
    },
    { $id: 'OrphanList', additionalProperties: false, description: 'Ordered by anchor.' },
  ),
);

export const OrphanKeepRequest = defineSchema(
  Type.Object(
    { note: Type.Optional(Type.String({ maxLength: 500, description: 'Why it is kept.' })) },
    { $id: 'OrphanKeepRequest', additionalProperties: false },
  ),
);

export const OrphanKeepMark = defineSchema(
  Type.Object(
    { csObjectId: Guid(), anchor: Type.String(), by: Type.String(), on: Timestamp(), note: Nullable(Type.String()) },
    { $id: 'OrphanKeepMark', additionalProperties: false },
  ),
);
