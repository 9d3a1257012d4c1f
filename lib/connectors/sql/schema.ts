import { Type, type Static } from '@sinclair/typebox';
import { ConnectorPolicyFields, Continuous, Dictionary } from '../../core/validation/schemas';
import type { FieldError } from '../../core/errors';

/**
 * Configuration of the SQL connector (type `sql`), per the contract's SQL table. `password` is secret
 * (`x-secret`). Queries are SQL text run by the connector with driver-bound parameters (`:watermark`,
 * `:attribute`): never concatenated.
 */
const Sql = (description: string) => Type.String({ minLength: 1, maxLength: 65536, description });

export const SqlConfigSchema = Type.Object(
  {
    dialect: Type.Union([Type.Literal('postgres'), Type.Literal('mysql'), Type.Literal('mssql')]),
    host: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s/]+$' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Default: the dialect's port (5432, 3306, 1433)." })),
    database: Type.String({ minLength: 1, maxLength: 256 }),
    user: Type.String({ minLength: 1, maxLength: 256 }),
    password: Type.String({
      minLength: 1,
      maxLength: 1024,
      'x-secret': true,
      writeOnly: true,
      description: 'Secret: never returned; `********` in a PUT keeps the stored value.',
    }),
    ssl: Type.Optional(
      Type.Union([
        Type.Boolean(),
        Type.Object(
          { ca: Type.Optional(Type.String({ minLength: 1, maxLength: 65536 })), rejectUnauthorized: Type.Optional(Type.Boolean()) },
          { additionalProperties: false },
        ),
      ]),
    ),
    timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, default: 30, description: 'Connect and statement timeout.' })),
    objectType: Type.Optional(Type.String({ minLength: 1, maxLength: 256, default: 'User' })),
    anchorColumn: Type.String({ minLength: 1, maxLength: 256 }),
    fullImportQuery: Sql('Returns every object, one row each.'),
    deltaImportQuery: Type.Optional(Sql('Uses the parameter :watermark; without it a delta import runs the full query.')),
    deltaColumn: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Required with deltaImportQuery.' })),
    deltaOverlapSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400, default: 0 })),
    deleteDetection: Type.Optional(
      Type.Union([
        Type.Object(
          {
            mode: Type.Literal('softDeleteColumn'),
            column: Type.String({ minLength: 1, maxLength: 256 }),
            value: Type.Union([Type.String({ maxLength: 1024 }), Type.Number(), Type.Boolean()]),
          },
          { additionalProperties: false },
        ),
        Type.Object({ mode: Type.Literal('query'), query: Sql('Returns the anchors deleted since :watermark.') }, { additionalProperties: false }),
        Type.Object({ mode: Type.Literal('anchorDiff'), everyNthDelta: Type.Integer({ minimum: 1, maximum: 100000 }) }, { additionalProperties: false }),
      ]),
    ),
    referenceColumns: Type.Optional(Dictionary(Type.String({ minLength: 1, maxLength: 256 }), { maxProperties: 200 })),
    multiValueQueries: Type.Optional(Dictionary(Sql('Returns (anchor, value) rows.'), { maxProperties: 200 })),
    exportStatements: Type.Optional(
      Type.Object(
        {
          insert: Type.Optional(Sql('INSERT with :attribute parameters.')),
          update: Type.Optional(Sql('UPDATE with :attribute parameters.')),
          delete: Type.Optional(Sql('DELETE with :anchor.')),
        },
        { additionalProperties: false },
      ),
    ),
    ...ConnectorPolicyFields(),
    continuous: Type.Optional(Continuous()),
  },
  { $id: 'SqlConnectorConfig', additionalProperties: false, dependentRequired: { deltaImportQuery: ['deltaColumn'] } },
);

export type SqlConfig = Static<typeof SqlConfigSchema>;

const DEFAULT_PORTS = { postgres: 5432, mysql: 3306, mssql: 1433 } as const;

export function sqlDefaults(config: SqlConfig): SqlConfig {
  return { ...config, port: config.port ?? DEFAULT_PORTS[config.dialect] };
}

export function sqlChecks(config: SqlConfig): FieldError[] {
  if (config.deltaImportQuery !== undefined && !config.deltaImportQuery.includes(':watermark')) {
    return [{ path: '/deltaImportQuery', message: 'must use the parameter :watermark' }];
  }
  return [];
}

export const SQL_EXPRESSIONS = ['provisioningCondition'] as const;
