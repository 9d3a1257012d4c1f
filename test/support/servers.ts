import { existsSync } from 'node:fs';

/**
 * System servers the integration suites need, the binary that tells whether each is installed, and the
 * one apt-get line that installs it. Outside CI a missing server skips its suite with a loud banner;
 * with CI=true it fails the suite.
 */
export const SERVERS = {
  slapd: { binary: '/usr/sbin/slapd', apt: 'apt-get install -y slapd ldap-utils' },
  kdc: { binary: '/usr/sbin/krb5kdc', apt: 'apt-get install -y krb5-kdc krb5-admin-server krb5-user libkrb5-dev' },
  postgres: { binary: '/usr/lib/postgresql', apt: 'apt-get install -y postgresql' },
  mariadb: { binary: '/usr/sbin/mariadbd', apt: 'apt-get install -y mariadb-server' },
  samba: { binary: '/usr/sbin/samba', apt: 'apt-get install -y samba-ad-dc samba-ad-provision samba-vfs-modules krb5-user' },
  ds389: { binary: '/usr/sbin/ns-slapd', apt: 'apt-get install -y 389-ds-base ldap-utils' },
  chromium: { binary: '/usr/bin/chromium', apt: 'apt-get install -y chromium' },
} as const;

export type ServerName = keyof typeof SERVERS;

export const isCI = /^(true|1)$/i.test(process.env.CI ?? '');

/** True when the server is installed. Throws in CI when it is not; prints a banner outside CI. */
export function serverAvailable(name: ServerName): boolean {
  const s = SERVERS[name];
  if (existsSync(s.binary)) return true;
  const msg = `${name} is not installed (${s.binary}). Install it with: sudo ${s.apt}`;
  if (isCI) throw new Error(`CI=true and ${msg}`);
  const bar = '#'.repeat(Math.min(100, msg.length + 8));
  console.warn(`\n${bar}\n### SKIPPED: ${msg}\n${bar}\n`);
  return false;
}

/** `describe` when the server is installed, a skipped describe (with the banner) when it is not. */
export function describeWithServer(name: ServerName): jest.Describe {
  return serverAvailable(name) ? describe : describe.skip;
}
