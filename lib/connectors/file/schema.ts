import { Type, type Static, type TSchema } from '@sinclair/typebox';

/**
 * Settings of the file connector: a custom connector (`type: "custom"`, `config.implementation: "file"`) whose
 * `config.settings` follow this schema. It reads a folder of CSV or JSON files (HR exports) and can write one
 * of them as an export target. See docs/connectors.md.
 */

/** An object keyed by column name; keys that could reach a prototype are refused. */
const ColumnMap = <T extends TSchema>(value: T, options: Record<string, unknown>) =>
  Type.Unsafe<Record<string, Static<T>>>({
    type: 'object',
    propertyNames: { type: 'string', minLength: 1, maxLength: 256, not: { enum: ['__proto__', 'constructor', 'prototype'] } },
    additionalProperties: value,
    ...options,
  });

const Column = (description: string) => Type.String({ minLength: 1, maxLength: 256, description });
const FileName = (description: string) => Type.String({ minLength: 1, maxLength: 255, pattern: '^(?!\\.\\.?$)[^/\\\\\\u0000]+$', description });

export const FileReferenceSchema = Type.Union([
  Type.String({ minLength: 1, maxLength: 256, description: 'The object type referenced; values are its anchors.' }),
  Type.Object(
    {
      objectType: Type.String({ minLength: 1, maxLength: 256 }),
      resolveBy: Type.Optional(Type.Union([Type.Literal('anchor'), Type.Literal('dn'), Type.Literal('attribute')], { description: 'Default anchor.' })),
      attribute: Type.Optional(Column('With resolveBy "attribute": the attribute of the referenced object that the values match.')),
    },
    { additionalProperties: false },
  ),
]);

export const FileConnectorSettingsSchema = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096, description: 'The folder holding the files (absolute path on the engine host).' }),
    format: Type.Union([Type.Literal('csv'), Type.Literal('json')], { default: 'csv', description: 'csv, or json (an array of objects or JSON Lines).' }),
    anchorColumn: Column('The column (JSON property) whose value is the immutable key of each row.'),
    objectType: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "Default: the connector's objectType, else User." })),
    delimiter: Type.String({
      minLength: 1,
      maxLength: 1,
      pattern: '^[^"\\r\\n\\u0080-\\uffff]$',
      default: ',',
      description: 'CSV field delimiter: one ASCII character.',
    }),
    encoding: Type.Union([Type.Literal('utf8'), Type.Literal('latin1'), Type.Literal('windows-1252')], { default: 'utf8' }),
    multiValueSeparator: Type.String({ minLength: 1, maxLength: 8, default: ';', description: 'Separates the values of a multi-valued CSV column.' }),
    multiValueColumns: Type.Array(Column('A multi-valued column.'), { maxItems: 500, uniqueItems: true, default: [] }),
    referenceColumns: Type.Optional(
      ColumnMap(FileReferenceSchema, {
        maxProperties: 200,
        description: 'Columns that reference another object: column -> object type (or how to resolve it).',
      }),
    ),
    dnColumn: Type.Optional(Column("The column holding the object's DN (a change of it is a rename).")),
    containerColumn: Type.Optional(Column("The column holding the object's container (a change of it is a rename).")),
    filePattern: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: '^[^/\\\\\\u0000]+$',
        description: 'Which files of the folder to read (* and ? wildcards). Default *.csv or *.json.',
      }),
    ),
    exportFile: Type.Optional(FileName('The file an export writes (inside the folder). Default export.csv or export.json.')),
    stateDirectory: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description: "Where delta state (row hashes) is kept. Default: the engine's state directory for the connector.",
      }),
    ),
  },
  { $id: 'FileConnectorSettings', additionalProperties: false },
);

export type FileConnectorSettings = Static<typeof FileConnectorSettingsSchema>;
