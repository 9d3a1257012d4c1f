import { Type, type Static } from '@sinclair/typebox';
import { ConnectorPolicyFields, Continuous, Dictionary } from '../../core/validation/schemas';

/**
 * Configuration of a custom connector (type `custom`): `implementation` names a connector registered in
 * code; `settings` is free-form and handed to it as is; every value under `secrets` is secret (`x-secret`).
 * Keys that could reach an object prototype are refused (Dictionary).
 */

export const CustomConfigSchema = Type.Object(
  {
    implementation: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: '^[A-Za-z0-9_.:-]+$',
      description: 'The name a custom connector is registered under.',
    }),
    settings: Type.Optional(Dictionary(Type.Unknown(), { maxProperties: 500, description: 'Free-form settings of the implementation.' })),
    secrets: Type.Optional(
      Dictionary(Type.String({ minLength: 1, maxLength: 4096, 'x-secret': true, writeOnly: true }), {
        maxProperties: 100,
        description: 'Secret settings: encrypted at rest, never returned.',
      }),
    ),
    objectType: Type.Optional(Type.String({ minLength: 1, maxLength: 256, default: 'User' })),
    ...ConnectorPolicyFields(),
    continuous: Type.Optional(Continuous()),
  },
  { $id: 'CustomConnectorConfig', additionalProperties: false },
);

export type CustomConfig = Static<typeof CustomConfigSchema>;

export const CUSTOM_EXPRESSIONS = ['provisioningCondition'] as const;
