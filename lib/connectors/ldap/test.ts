import { ConnectorError, type ConnectionTestResult } from '../sdk';
import { adRights, dirSyncMissesDeletes } from './adRights';
import type { DirectoryConfig } from './schema';
import type { DirectorySession } from './session';
import { isUnder } from './values';

const AD_CAPABILITY_OID = '1.2.840.113556.1.4.800';

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
  config: Pick<DirectoryConfig, 'host' | 'port' | 'security' | 'bindDN' | 'baseDN' | 'containers' | 'deltaStrategy'>,
): Promise<ConnectionTestResult> {
  const entries: [setting: string, dn: string][] = [['baseDN', config.baseDN]];
  for (const dn of config.containers?.include ?? []) entries.push(['containers.include', dn]);
  for (const [setting, dn] of entries) await readEntry(session, setting, dn);
  const rights = await deltaRights(session, config);
  const where = `${config.host}:${config.port} (${config.security ?? 'ldaps'})`;
  const also = entries.length > 1 ? ` and ${entries.length - 1} included container(s) are` : ' is';
  return { message: `Bound to ${where} as ${config.bindDN}; ${config.baseDN}${also} readable${rights}.` };
}

/**
 * On Active Directory, the `usn` strategy (`deltaStrategy` usn, or auto, which picks it there) reads deletes from
 * the tombstones in CN=Deleted Objects: an account that cannot list them would miss every delete without an
 * error, so it is refused, naming the right it lacks. Likewise `dirsync` on a Samba DC for an account that holds
 * Replicating Directory Changes but is not an administrator (Samba's DirSync returns deletes to administrators
 * only); `auto`, which would pick `dirsync` for it, picks `timestamp` there. Other directories and strategies: nothing to check.
 */
async function deltaRights(session: DirectorySession, config: Pick<DirectoryConfig, 'bindDN' | 'baseDN' | 'deltaStrategy'>): Promise<string> {
  const strategy = config.deltaStrategy ?? 'auto';
  if (strategy !== 'usn' && strategy !== 'auto' && strategy !== 'dirsync') return '';
  // A directory that hides its root DSE is not Active Directory (AD always shows it).
  const [root] = await session
    .search({ base: '', scope: 'base', filter: '(objectClass=*)', attributes: ['supportedCapabilities', 'namingContexts', 'defaultNamingContext'] })
    .catch(() => []);
  const list = (name: string): string[] => {
    const v = root?.[Object.keys(root ?? {}).find((k) => k.toLowerCase() === name.toLowerCase()) ?? ''];
    return (Array.isArray(v) ? v : v === undefined ? [] : [v]).map(String);
  };
  if (!list('supportedCapabilities').includes(AD_CAPABILITY_OID)) return '';
  const nc = [...list('namingContexts'), ...list('defaultNamingContext')].filter((x) => x && isUnder(config.baseDN, x)).sort((a, b) => b.length - a.length)[0];
  if (!nc) return '';
  const rights = await adRights(session, config.bindDN, nc);
  // Samba's DirSync shows no deletes to a non-administrator: refused (dirsync), or not picked (auto).
  const missesDeletes = rights.replicatingDirectoryChanges ? await dirSyncMissesDeletes(session, config.bindDN, nc, rights) : undefined;
  if (strategy === 'dirsync') {
    if (missesDeletes) throw new ConnectorError('configuration_invalid', missesDeletes);
    if (rights.replicatingDirectoryChanges) return '; it holds Replicating Directory Changes (dirsync delta)';
    throw new ConnectorError(
      'configuration_invalid',
      `deltaStrategy dirsync: the bind account ${config.bindDN} lacks the "Replicating Directory Changes" right on ${nc}, which the DirSync control needs. Grant it on the domain, or use deltaStrategy usn with an account that can list deleted objects.`,
    );
  }
  if (strategy === 'auto' && !rights.seesDeletedObjects && missesDeletes)
    return "; it cannot list deleted objects and Samba's DirSync shows deletes to administrators only (auto: timestamp delta, deletes found by the full anchor-set comparison every 10th delta)";
  if (strategy === 'auto' && !rights.seesDeletedObjects && rights.replicatingDirectoryChanges)
    return '; it cannot list deleted objects but holds Replicating Directory Changes (auto: dirsync delta)';
  if (!rights.seesDeletedObjects) {
    throw new ConnectorError(
      'configuration_invalid',
      `deltaStrategy ${strategy}: the bind account ${config.bindDN} cannot list deleted objects (it lacks List Contents and Read Property on CN=Deleted Objects,${nc}), so a USN delta would miss every delete. Bind as an account that has them (members of Domain Admins do), grant them to this account, or grant it "Replicating Directory Changes" on the domain and use deltaStrategy dirsync (or auto).`,
    );
  }
  return '; it can list deleted objects (usn delta)';
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
      throw new ConnectorError(
        'configuration_invalid',
        `${setting} '${dn}' was not found in the directory (no such object), or the bind account may not read it.`,
      );
    }
    throw err;
  }
  if (!found.length)
    throw new ConnectorError('configuration_invalid', `${setting} '${dn}' is not readable by the bind account (the directory returned no entry).`);
}
