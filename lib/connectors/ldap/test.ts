import { ConnectorError, type ConnectionTestResult } from '../sdk';
import type { DirectoryConfig } from './schema';
import type { DirectorySession } from './session';

/**
 * The directory connector's connection test, on a session that is already open and bound (opening it is what
 * checks the host, the TLS certificate and the bind DN and password; see `openSession`): the base DN and every
 * `containers.include` entry must be readable as that account, by a base-scope read that asks for no
 * attribute. Throws a {@link ConnectorError} whose message says what failed and names the entry; never a
 * secret.
 *
 * Kept apart from the connector's import and export code: the Admin API runs it on every create and update
 * of an `ldap` or `active_directory` connector, and `POST /connectors/{id}/test` runs it on demand.
 */
export async function testDirectorySession(
  session: DirectorySession,
  config: Pick<DirectoryConfig, 'host' | 'port' | 'security' | 'bindDN' | 'baseDN' | 'containers'>,
): Promise<ConnectionTestResult> {
  const entries: [setting: string, dn: string][] = [['baseDN', config.baseDN]];
  for (const dn of config.containers?.include ?? []) entries.push(['containers.include', dn]);
  for (const [setting, dn] of entries) await readEntry(session, setting, dn);
  const where = `${config.host}:${config.port} (${config.security ?? 'ldaps'})`;
  const also = entries.length > 1 ? ` and ${entries.length - 1} included container(s) are` : ' is';
  return { message: `Bound to ${where} as ${config.bindDN}; ${config.baseDN}${also} readable.` };
}

/**
 * A base-scope read of one entry. "No such object" (LDAP result 32, which the session reports as a
 * configuration_invalid "no such object") and an empty answer (the entry exists but this account may not see it) both mean the
 * connector would read nothing there.
 */
async function readEntry(session: DirectorySession, setting: string, dn: string): Promise<void> {
  let found: unknown[];
  try {
    found = await session.search({ base: dn, scope: 'base', filter: '(objectClass=*)', attributes: ['1.1'] });
  } catch (err) {
    if (err instanceof ConnectorError && err.code === 'configuration_invalid' && /no such object/i.test(err.message)) {
      throw new ConnectorError('configuration_invalid', `${setting} '${dn}' was not found in the directory (no such object), or the bind account may not read it.`);
    }
    throw err;
  }
  if (!found.length) throw new ConnectorError('configuration_invalid', `${setting} '${dn}' is not readable by the bind account (the directory returned no entry).`);
}
