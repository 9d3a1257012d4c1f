import type { DirectorySession } from './session';

/**
 * The default anchor of an `ldap` connector whose configuration leaves `anchorAttribute` out, from the server's
 * root DSE: `nsUniqueId` on 389 Directory Server and the servers built on it (Red Hat Directory Server, FreeIPA,
 * the older Fedora Directory Server), where every entry has one, while entries made before the entryUUID plugin
 * (an upgraded instance, the instance's own sample entries) have no entryUUID; `entryUUID` elsewhere (OpenLDAP,
 * OpenDJ, ...). The Admin API decides it at the test on create and stores it with the connector, so the
 * anchor stays the same for the connector's lifetime.
 */
export async function defaultLdapAnchor(session: DirectorySession): Promise<string> {
  const [root] = await session.search({ base: '', scope: 'base', filter: '(objectClass=*)', attributes: ['vendorName', 'vendorVersion'] }).catch(() => []);
  const text = (name: string): string => {
    const key = Object.keys(root ?? {}).find((k) => k.toLowerCase() === name.toLowerCase());
    const v = key ? root?.[key] : undefined;
    return (Array.isArray(v) ? v : v === undefined ? [] : [v]).map(String).join(' ');
  };
  return is389(text('vendorName'), text('vendorVersion')) ? 'nsUniqueId' : 'entryUUID';
}

/** 389 Directory Server by its root DSE: vendorName `389 Project`, vendorVersion `389-Directory/2.3.1 ...` (`Red Hat-Directory/...` on RHDS). */
export function is389(vendorName: string, vendorVersion: string): boolean {
  return /\b389 Project\b/i.test(vendorName) || /^(389|Red Hat|Fedora)-Directory\//i.test(vendorVersion.trim());
}
