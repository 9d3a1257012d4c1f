import { Type } from '@sinclair/typebox';
import { AppError } from '../../../lib/core/errors';
import { connectorTypeConfig } from '../../../lib/connectors/registry';
import { defineSchema, validate } from '../../../lib/schemas';
import { Nullable } from '../../../lib/core/validation/schemas';
import { CreateConnectorRequest } from '../../../lib/schemas/connectors';
import { CreateRuleRequest } from '../../../lib/schemas/rules';

/** The `errors` of a 400: what a caller reads to fix the request. */
function errorsOf(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).extra.errors ?? [];
  }
  throw new Error('expected a validation error');
}

const ldap = { host: 'h', baseDN: 'dc=x', bindDN: 'cn=y', bindPassword: 'p' };

describe('a value outside a choice lists the allowed values', () => {
  it('a choice of literals (security, direction, ruleType, type)', () => {
    expect(errorsOf(() => validate(connectorTypeConfig('ldap').configSchema, { ...ldap, security: 'tls' }, { pathPrefix: '/config' }))).toEqual([
      { path: '/config/security', message: 'must be one of: ldaps, starttls, none' },
    ]);
    expect(errorsOf(() => validate(CreateRuleRequest, { ruleName: 'r', ruleType: 'FlowRule', direction: 'both' }))).toEqual([
      { path: '/direction', message: 'must be one of: inbound, outbound' },
    ]);
    expect(errorsOf(() => validate(CreateRuleRequest, { ruleName: 'r', ruleType: 'MagicRule' }))).toEqual([
      { path: '/ruleType', message: 'must be one of: JoinRule, FlowRule, ProjectionRule, MeshComposerRule' },
    ]);
    expect(errorsOf(() => validate(CreateConnectorRequest, { name: 'x', type: 'ftp', config: {} }))).toEqual([
      { path: '/type', message: 'must be one of: active_directory, ldap, sql, custom, scim_inbound, scim' },
    ]);
  });

  it('a value of the wrong type gets the same single answer', () => {
    expect(errorsOf(() => validate(connectorTypeConfig('ldap').configSchema, { ...ldap, security: 5 }, { pathPrefix: '/config' }))).toEqual([
      { path: '/config/security', message: 'must be one of: ldaps, starttls, none' },
    ]);
  });

  it('a nullable choice lists null, and a plain enum lists its values', () => {
    const schema = defineSchema(
      Type.Object(
        { mode: Type.Optional(Nullable(Type.Union([Type.Literal('a'), Type.Literal('b')]))), size: Type.Optional(Type.Unsafe({ enum: ['s', 'm', 1] })) },
        { $id: 'UnitChoiceErrors', additionalProperties: false },
      ),
    );
    expect(errorsOf(() => validate(schema, { mode: 'c', size: 'xl' }))).toEqual([
      { path: '/mode', message: 'must be one of: a, b, null' },
      { path: '/size', message: 'must be one of: s, m, 1' },
    ]);
  });

  it('a choice between shapes (not values) keeps its specific errors', () => {
    const threshold = errorsOf(() =>
      validate(connectorTypeConfig('ldap').configSchema, { ...ldap, deletionThreshold: { objects: -1 } }, { pathPrefix: '/config' }),
    );
    expect(threshold).toContainEqual({ path: '/config/deletionThreshold/objects', message: 'must be >= 0' });
    expect(threshold.some((e) => e.message.startsWith('must be one of'))).toBe(false);
  });
});
