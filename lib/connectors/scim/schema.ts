import { Type, type Static } from '@sinclair/typebox';
import type { FieldError } from '../../core/errors';
import { ConnectorPolicyFields } from '../../core/validation/schemas';

/**
 * Configuration of the SCIM client connector (type `scim`, docs/scim.md "SCIM client connector"): a SCIM 2.0
 * server the service reads (full and delta import) and provisions (export). `auth.token` and `auth.clientSecret`
 * are secrets (`x-secret`); the fields marked `x-endpoint` say where and as whom the connector connects, so a
 * change of one of them must send the secrets again.
 */
const Secret = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: 8192,
    'x-secret': true,
    writeOnly: true,
    description: `${description} Secret: never returned; \`********\` in a PUT keeps the stored value.`,
  });

export const ScimConfigSchema = Type.Object(
  {
    baseUrl: Type.String({
      minLength: 8,
      maxLength: 2048,
      pattern: '^https?://[^\\s?#]+$',
      'x-endpoint': true,
      description: 'The SCIM base URL, without a query (`https://app.example.com/scim/v2`); `/Users`, `/Groups`, `/ServiceProviderConfig` are below it.',
    }),
    allowHttp: Type.Optional(
      Type.Boolean({
        default: false,
        'x-endpoint': true,
        description: 'Allow a plain http:// baseUrl or tokenUrl (the token travels in clear text): only for a test server on a trusted network.',
      }),
    ),
    auth: Type.Object(
      {
        type: Type.Union([Type.Literal('bearer'), Type.Literal('oauthClientCredentials')], {
          'x-endpoint': true,
          description: 'bearer: a static token; oauthClientCredentials: a token obtained with the client credentials grant (RFC 6749 4.4).',
        }),
        token: Type.Optional(Secret('With type bearer: the token, sent as `Authorization: Bearer <token>`.')),
        tokenUrl: Type.Optional(
          Type.String({
            minLength: 8,
            maxLength: 2048,
            pattern: '^https?://\\S+$',
            'x-endpoint': true,
            description: 'With oauthClientCredentials: the token endpoint.',
          }),
        ),
        clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, 'x-endpoint': true, description: 'With oauthClientCredentials.' })),
        clientSecret: Type.Optional(Secret('With oauthClientCredentials: sent with HTTP Basic authentication (client_secret_basic).')),
        scope: Type.Optional(
          Type.String({ minLength: 1, maxLength: 2048, 'x-endpoint': true, description: 'With oauthClientCredentials: the scope asked for, if any.' }),
        ),
      },
      { additionalProperties: false },
    ),
    resourceTypes: Type.Optional(
      Type.Array(Type.Union([Type.Literal('User'), Type.Literal('Group')]), {
        minItems: 1,
        maxItems: 2,
        uniqueItems: true,
        default: ['User', 'Group'],
        description: 'What is read and written: User (/Users) and Group (/Groups).',
      }),
    ),
    pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Resources per list request (`count`).' })),
    useBulk: Type.Optional(Type.Boolean({ default: false, description: 'Export through /Bulk when the server supports it (ServiceProviderConfig).' })),
    bulkMaxOperations: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, default: 50, description: "Operations per Bulk request, at most the server's maxOperations." }),
    ),
    timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 300, default: 30, description: 'The longest one request may take.' })),
    maxRetries: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 10,
        default: 4,
        description: 'Retries of a request answered 429 or 503, after Retry-After or a jittered exponential backoff.',
      }),
    ),
    deltaOverlapSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 86400,
        default: 60,
        description: 'A delta import reads what was modified since the last watermark less this margin (servers keep seconds; clocks drift).',
      }),
    ),
    ...ConnectorPolicyFields(),
  },
  { $id: 'ScimConnectorConfig', additionalProperties: false },
);

export type ScimConfig = Static<typeof ScimConfigSchema>;

export const SCIM_EXPRESSIONS = ['provisioningCondition'] as const;

/** The checks the schema does not express: the fields each auth type needs, and https unless allowed otherwise. */
export function scimChecks(config: ScimConfig): FieldError[] {
  const errors: FieldError[] = [];
  const a = config.auth;
  const need = (key: keyof ScimConfig['auth']) => {
    if (a[key] === undefined) errors.push({ path: `/auth/${key}`, message: `is required with auth type '${a.type}'` });
  };
  const refuse = (key: keyof ScimConfig['auth']) => {
    if (a[key] !== undefined) errors.push({ path: `/auth/${key}`, message: `is not used with auth type '${a.type}'` });
  };
  if (a.type === 'bearer') {
    need('token');
    for (const k of ['tokenUrl', 'clientId', 'clientSecret', 'scope'] as const) refuse(k);
  } else {
    for (const k of ['tokenUrl', 'clientId', 'clientSecret'] as const) need(k);
    refuse('token');
  }
  if (!config.allowHttp) {
    const http = 'uses http://: the token would travel in clear text. Use https://, or set allowHttp for a test server on a trusted network';
    if (/^http:/i.test(config.baseUrl)) errors.push({ path: '/baseUrl', message: http });
    if (a.tokenUrl && /^http:/i.test(a.tokenUrl)) errors.push({ path: '/auth/tokenUrl', message: http });
  }
  return errors;
}
