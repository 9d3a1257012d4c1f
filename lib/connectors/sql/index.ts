import type { ConnectionTestResult, ConnectorDefinition } from '../sdk';
import { SqlConfigSchema, type SqlConfig } from './schema';
import { SqlConnector } from './sqlConnector';

export { SqlConnector, resolveSqlConfig } from './sqlConnector';
export { compileSql, parameterNames, quoteIdent, type SqlDialect } from './params';

/**
 * The SQL connector's definition for the registry (type `sql`). Creating a connector does no I/O; each
 * operation opens its own connection and closes it.
 */
export const sqlConnectorDefinition: ConnectorDefinition<SqlConfig> = {
  type: 'sql',
  configSchema: SqlConfigSchema,
  create: (config, context) => new SqlConnector(config, context),
};

export { validateSqlConfig } from './validate';

/**
 * The create-time check with I/O: connect with the configuration, run every configured query without rows
 * (`WHERE 1 = 0`), and check that anchorColumn, deltaColumn, referenceColumns and every export parameter
 * name a column the queries return. Throws a ConnectorError (`authentication_failed`, `connection_failed`,
 * `timeout`, `configuration_invalid`) whose message is safe to show.
 */
export async function testSqlConnection(config: SqlConfig): Promise<ConnectionTestResult> {
  const c = new SqlConnector(config);
  try {
    return await c.testConnection();
  } finally {
    await c.close();
  }
}
