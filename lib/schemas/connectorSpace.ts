import { Type, type Static } from '@sinclair/typebox';
import { defineSchema } from '../core/validation/ajv';
import { Dictionary, Guid, Nullable, Timestamp } from '../core/validation/schemas';

/** Schemas of `/connectors/{id}/space/...` (the connector space: what the engine holds of each connector's objects). */
const Count = () => Type.Integer({ minimum: 0 });
const pendingProps = () => ({
  operation: Type.Union([Type.Literal('Add'), Type.Literal('Update'), Type.Literal('Delete'), Type.Literal('Rename')]),
  attributeCount: Count(),
  stagedOn: Timestamp({
    description:
      "When the change became pending: its first failure for a change the target refused, else the mesh change that makes it (the mesh object's last update; a deprovisioning: its start, or when it fell due).",
  }),
});

export const ConnectorSpaceObject = defineSchema(
  Type.Object(
    {
      csObjectId: Guid({ description: 'The id of the object in this connector space, stable for its life there (a staged add keeps it once added).' }),
      anchor: Nullable(Type.String({ description: "The object's anchor in the connector; null for a staged add (no object in the target yet)." })),
      dn: Nullable(Type.String({ description: 'Its distinguished name (directories), else null.' })),
      objectType: Type.String(),
      meshObjectId: Nullable(Guid({ description: 'The mesh object it is joined to (a staged add: the one it adds), else null.' })),
      pendingExport: Nullable(
        Type.Object(pendingProps(), {
          additionalProperties: false,
          description:
            'The change the next export would send to the object (or a change the target refused, waiting to be tried again); under `scheduledDeprovision`, the change its deprovisioning will send when due.',
        }),
      ),
      awaitingConfirmation: Type.Boolean({ description: 'Exported values not yet seen back by an import of the connector.' }),
      error: Nullable(
        Type.Object(
          {
            message: Type.String({ description: "The target's message." }),
            runId: Guid({ description: 'The export run of the last failure.' }),
            occurredOn: Timestamp(),
            attempts: Type.Integer({
              minimum: 1,
              description: 'Export runs that tried the change and failed; at Export__MaxAttempts exports skip it until retried.',
            }),
          },
          { additionalProperties: false },
        ),
      ),
      lastImportedOn: Nullable(Timestamp({ description: 'When an import last wrote the object as the connector showed it.' })),
      lastExportedOn: Nullable(Timestamp({ description: 'When an export last applied a change to it.' })),
      dueOn: Type.Optional(
        Timestamp({
          description: 'Under `state=scheduledDeprovision` only: when the deprovisioning waiting for its grace is due (the first export after it applies it).',
        }),
      ),
    },
    { $id: 'ConnectorSpaceObject', additionalProperties: false },
  ),
);
export type ConnectorSpaceObject = Static<typeof ConnectorSpaceObject>;

/** An attribute value as the engine holds it: a string, number, boolean, null, or a list of those. */
const Value = () =>
  Type.Unsafe<unknown>({
    description: 'An attribute value: a string, number, boolean, null, or an array of those.',
    anyOf: [{ type: ['string', 'number', 'boolean', 'null'] }, { type: 'array', items: { type: ['string', 'number', 'boolean', 'null'] } }],
  });
const OldNew = () => Type.Object({ old: Value(), new: Value() }, { additionalProperties: false });

export const OneObjectSync = defineSchema(
  Type.Object(
    {
      csObjectId: Guid(),
      meshObjectId: Nullable(Guid({ description: 'The mesh object the object is (or would be) joined to; null when it joins nothing.' })),
      join: Type.Object(
        {
          outcome: Type.Union([Type.Literal('joined'), Type.Literal('projected'), Type.Literal('none'), Type.Literal('ambiguous')], {
            description:
              '`joined`: linked already, or a join rule found one mesh object; `projected`: a projection rule makes a new mesh object; `none`: a disconnector; `ambiguous`: a join rule found several (nothing joined).',
          }),
          ruleId: Nullable(Guid({ description: 'The join or projection rule that decided; null for an object linked already.' })),
          candidates: Type.Array(Guid(), { description: 'The mesh objects the join found (several: ambiguous).' }),
        },
        { additionalProperties: false },
      ),
      meshChanges: Type.Array(
        Type.Object(
          {
            attribute: Type.String(),
            old: Value(),
            new: Value(),
            ruleId: Nullable(
              Type.String({ description: 'The rule whose value wins (flow or composer); for an attribute that goes, the rule of the old value.' }),
            ),
          },
          { additionalProperties: false },
        ),
      ),
      exports: Type.Array(
        Type.Object(
          {
            connectorId: Guid({ description: 'The target connector.' }),
            operation: Type.Union([Type.Literal('Add'), Type.Literal('Update'), Type.Literal('Delete'), Type.Literal('Rename')]),
            csObjectId: Guid({ description: "The object in the target's connector space (an add: the id it is staged with)." }),
            dn: Nullable(Type.String({ description: 'Directories: the DN (an add: the one the DN template gives).' })),
            attributes: Dictionary(OldNew(), {
              description:
                'Connector-side attributes: what the target shows now (`old`) and what the export writes (`new`). Write-only secrets are never listed.',
            }),
          },
          { additionalProperties: false },
        ),
        { description: "What the targets' next exports do for the object (exporting stays the export run's job)." },
      ),
      applied: Type.Optional(Type.Literal(true, { description: 'Present on a sync: the mesh and the connector spaces were written.' })),
    },
    { $id: 'OneObjectSync', additionalProperties: false },
  ),
);
export type OneObjectSync = Static<typeof OneObjectSync>;

export const ConnectorSpaceList = defineSchema(
  Type.Object(
    {
      items: Type.Array(Type.Ref('ConnectorSpaceObject')),
      totalCount: Count(),
      partial: Type.Optional(
        Type.Boolean({
          description:
            'Under `state=pendingExport` or `scheduledDeprovision`: true when the next export has more objects to look at than one listing computes (20,000): only those read first were looked at, the list is incomplete.',
        }),
      ),
    },
    { $id: 'ConnectorSpaceList', additionalProperties: false, description: 'Ordered by anchor; staged adds (anchor null) last, by csObjectId.' },
  ),
);
export type ConnectorSpaceList = Static<typeof ConnectorSpaceList>;

/** An attribute value as a connector shows it: a scalar or a list (secret attributes are masked). */
const ShownValue = () => Type.Unknown({ description: 'A value or a list of values.' });

export const ConnectorSpaceObjectDetail = defineSchema(
  Type.Object(
    {
      ...ConnectorSpaceObject.properties,
      attributes: Dictionary(ShownValue(), { description: 'The attributes as last imported (a staged add: none).' }),
      pendingExport: Nullable(
        Type.Object(
          {
            ...pendingProps(),
            attributes: Dictionary(Type.Object({ old: ShownValue(), new: ShownValue() }, { additionalProperties: false }), {
              description: 'Per attribute, the value the connector space holds now (exported, else imported; null when none) and the value the change sends.',
            }),
          },
          { additionalProperties: false },
        ),
      ),
      exportedValues: Dictionary(ShownValue(), { description: 'Values exported and not yet seen back by an import (awaiting confirmation).' }),
    },
    { $id: 'ConnectorSpaceObjectDetail', additionalProperties: false },
  ),
);
export type ConnectorSpaceObjectDetail = Static<typeof ConnectorSpaceObjectDetail>;
