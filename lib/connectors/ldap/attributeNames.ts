import type { DirectoryConfig } from './schema';
import { openSession } from './session';
import { canonicalAttributeNames, schemaAttributeTypes } from './schemaReferences';

/**
 * The attribute names a directory knows, lower-cased to the schema's spelling (see
 * {@link canonicalAttributeNames}), read with the connector's configuration (secrets included) from the
 * subschema entry. undefined when the schema cannot be read (no subschema, or not readable by the bind
 * account). Connection failures throw the session's ConnectorError.
 */
export async function directoryAttributeNames(config: DirectoryConfig & { port: number }): Promise<Map<string, string> | undefined> {
  const session = await openSession({
    host: config.host,
    port: config.port,
    bindDN: config.bindDN,
    bindPassword: config.bindPassword,
    security: config.security ?? 'ldaps',
    allowInsecure: config.allowInsecure,
    caCertificate: config.caCertificate,
    timeoutSeconds: Math.min(config.timeoutSeconds ?? 30, 10),
  });
  try {
    const types = await schemaAttributeTypes(session, `${config.host}:${config.port}`);
    return types ? canonicalAttributeNames(types) : undefined;
  } finally {
    await session.close();
  }
}
