import { Type } from '@sinclair/typebox';
import { defineSchema } from '../core/validation/ajv';

/** Request bodies of the import/export triggers (both optional: an empty body takes the defaults). */
export const TriggerImportRequestSchema = defineSchema(
  Type.Object(
    {
      runType: Type.Optional(
        Type.Union([Type.Literal('FullImport'), Type.Literal('DeltaImport'), Type.Literal('FullSync')], {
          default: 'DeltaImport',
          description: 'Default DeltaImport. FullSync reads no source: every connector-space object of the connector goes through the current rules again.',
        }),
      ),
      dryRun: Type.Optional(Type.Boolean({ default: false, description: 'Compute and report what would change without writing the mesh.' })),
    },
    { $id: 'TriggerImportRequest', additionalProperties: false },
  ),
);

export const TriggerExportRequestSchema = defineSchema(
  Type.Object(
    {
      runType: Type.Optional(
        Type.Union([Type.Literal('Export'), Type.Literal('OrphanSweep')], {
          default: 'Export',
          description:
            "Default Export. OrphanSweep disables (or, with deprovisioning.orphanAction delete, deletes) the target's orphans: accounts joined to no active identity (GET /connectors/{id}/orphans).",
        }),
      ),
      dryRun: Type.Optional(Type.Boolean({ default: false, description: 'Compute and report what would be exported without writing the target.' })),
    },
    { $id: 'TriggerExportRequest', additionalProperties: false },
  ),
);
