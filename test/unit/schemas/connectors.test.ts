import { AppError } from '../../../lib/core/errors';
import { CONNECTOR_TYPES, connectorTypeConfig } from '../../../lib/connectors/registry';
import { ajv, registeredSchemas, validate } from '../../../lib/schemas';
import { CreateConnectorRequest } from '../../../lib/schemas/connectors';
import { CreateRuleRequest } from '../../../lib/schemas/rules';
import '../../../lib/schemas/admin';
import { secretPaths } from '../../../lib/secrets';

function errorsOf(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).extra.errors ?? [];
  }
  throw new Error('expected a validation error');
}

describe('the one Ajv instance', () => {
  it('has every request/response schema registered by $id and compiled', () => {
    for (const id of [
      'CreateConnectorRequest',
      'UpdateConnectorRequest',
      'Connector',
      'ConnectorList',
      'CreateRuleRequest',
      'Rule',
      'RuleList',
      'License',
      'AuditList',
      'Health',
      'ProblemDetails',
    ]) {
      expect(registeredSchemas().has(id)).toBe(true);
      expect(ajv.getSchema(id)).toBeDefined();
    }
  });
});

describe('connector config schemas', () => {
  it('mark exactly the contract secrets', () => {
    const ldap = connectorTypeConfig('ldap').configSchema;
    expect(secretPaths(ldap, { host: 'h', bindPassword: 'p', bindDN: 'x' })).toEqual([['bindPassword']]);
    expect(secretPaths(connectorTypeConfig('sql').configSchema, { password: 'p', user: 'u' })).toEqual([['password']]);
    expect(secretPaths(connectorTypeConfig('custom').configSchema, { implementation: 'x', settings: { a: 'b' }, secrets: { k1: 'v1', k2: 'v2' } })).toEqual([
      ['secrets', 'k1'],
      ['secrets', 'k2'],
    ]);
  });

  it('report errors under /config with JSON pointers', () => {
    const errors = errorsOf(() =>
      validate(
        connectorTypeConfig('sql').configSchema,
        { dialect: 'oracle', host: 'h', database: 'd', user: 'u', password: 'p', anchorColumn: 'id', fullImportQuery: 'q', ssl: { ca: 'x', bogus: 1 } },
        { pathPrefix: '/config' },
      ),
    );
    expect(errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: '/config/dialect' }), { path: '/config/ssl/bogus', message: 'is not a known property' }]),
    );
  });

  it('have a schema for every connector type', () => {
    for (const t of CONNECTOR_TYPES) expect(connectorTypeConfig(t).configSchema.$id).toMatch(/ConnectorConfig$/);
  });

  it('the create request refuses an unknown type and unknown fields', () => {
    const errors = errorsOf(() => validate(CreateConnectorRequest, { name: 'x', type: 'ftp', config: {}, more: true }));
    expect(errors.map((e) => e.path).sort()).toEqual(['/more', '/type']);
  });
});

describe('rule schema', () => {
  it('fills priority and isEnabled defaults and bounds confidence', () => {
    expect(validate(CreateRuleRequest, { ruleName: 'r', ruleType: 'JoinRule' })).toMatchObject({ priority: 100, isEnabled: true });
    const errors = errorsOf(() => validate(CreateRuleRequest, { ruleName: 'r', ruleType: 'FlowRule', confidence: 100.5 }));
    expect(errors.map((e) => e.path)).toEqual(['/confidence', '/confidence']);
    expect(errors.map((e) => e.message).sort()).toEqual(['must be <= 100', 'must be integer or null']);
  });
});
