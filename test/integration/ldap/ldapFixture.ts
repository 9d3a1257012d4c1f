import { Attribute, Change, Client } from 'ldapts';
import { LdapConnector } from '../../../lib/connectors/ldap';
import type { DirectoryConfig } from '../../../lib/connectors/ldap/schema';
import type { ConnectorObject, ExportChange } from '../../../lib/connectors/sdk';
import { freePort } from '../../../lib/runtime/azurite';
import type { ContractFixture, ContractPerson, ContractReading } from '../../support/connectorContract';
import type { Slapd } from '../../support/slapd';

/**
 * The contract fixture over a real slapd: each fixture gets its own subtree (`ou=tN,<suffix>`) as the
 * connector's baseDN, with ou=Engineering and ou=Sales below it. A person is an inetOrgPerson:
 * uid/employeeNumber = key, description = the multi-valued "proxyAddresses", manager = the manager's DN.
 */
let counter = 0;

export function rdnValue(dn: string): string {
  return /^[^=]+=([^,]+)/.exec(dn)![1];
}

export class SlapdFixture implements ContractFixture {
  readonly base: string;
  readonly dns = new Map<string, string>();
  readonly secrets: string[];
  private admin: Client | undefined;

  constructor(
    readonly slapd: Slapd,
    readonly overrides: Partial<DirectoryConfig> = {},
  ) {
    this.base = `ou=t${++counter}-${process.pid},${slapd.suffix}`;
    this.secrets = [slapd.rootPassword];
  }

  async client(): Promise<Client> {
    if (!this.admin) {
      this.admin = new Client({ url: this.slapd.url });
      await this.admin.bind(this.slapd.rootDN, this.slapd.rootPassword);
    }
    return this.admin;
  }

  async init(): Promise<this> {
    const c = await this.client();
    await c.add(this.base, { objectClass: 'organizationalUnit', ou: rdnValue(this.base) });
    for (const ou of ['Engineering', 'Sales', 'groups']) await c.add(`ou=${ou},${this.base}`, { objectClass: 'organizationalUnit', ou });
    return this;
  }

  config(extra: Partial<DirectoryConfig> = {}): DirectoryConfig {
    return {
      host: 'localhost',
      port: this.slapd.ldapsPort,
      security: 'ldaps',
      caCertificate: this.slapd.caCertificate,
      baseDN: this.base,
      bindDN: this.slapd.rootDN,
      bindPassword: this.slapd.rootPassword,
      deltaStrategy: 'accesslog',
      exportDnTemplate: '"uid=" + dnEscape(source.uid) + ",ou=" + dnEscape(source.departmentNumber) + "," + baseDN',
      ...this.overrides,
      ...extra,
    };
  }

  connector(extra: Partial<DirectoryConfig> = {}): LdapConnector {
    return new LdapConnector('ldap', this.config(extra));
  }

  unreachableConnector(): LdapConnector {
    // A port nobody listens on.
    return new LdapConnector('ldap', { ...this.config(), port: 1 });
  }

  dnOf(p: Pick<ContractPerson, 'key' | 'container'>): string {
    return `uid=${p.key},ou=${p.container ?? 'Engineering'},${this.base}`;
  }

  async seed(people: ContractPerson[]): Promise<void> {
    const c = await this.client();
    for (const p of people) {
      if (this.dns.has(p.key)) continue;
      const dn = this.dnOf(p);
      const attrs: Record<string, string[] | string> = {
        objectClass: 'inetOrgPerson',
        uid: p.key,
        employeeNumber: p.key,
        givenName: p.givenName,
        sn: p.sn,
        cn: `${p.givenName} ${p.sn}`,
      };
      if (p.mail) attrs.mail = p.mail;
      if (p.proxyAddresses?.length) attrs.description = p.proxyAddresses;
      if (p.manager) attrs.manager = this.dns.get(p.manager)!;
      await c.add(dn, attrs);
      this.dns.set(p.key, dn);
    }
  }

  async update(key: string, changes: Partial<Omit<ContractPerson, 'key'>>): Promise<void> {
    const c = await this.client();
    const mods: Change[] = [];
    const rep = (type: string, values: string[]) => mods.push(new Change({ operation: 'replace', modification: new Attribute({ type, values }) }));
    if (changes.givenName !== undefined) rep('givenName', [changes.givenName]);
    if (changes.sn !== undefined) rep('sn', [changes.sn]);
    if ('mail' in changes) rep('mail', changes.mail ? [changes.mail] : []);
    if (changes.proxyAddresses) rep('description', changes.proxyAddresses);
    if ('manager' in changes) rep('manager', changes.manager ? [this.dns.get(changes.manager)!] : []);
    if (mods.length) await c.modify(this.dns.get(key)!, mods);
    if (changes.container) await this.move(key, changes.container);
  }

  async remove(key: string): Promise<void> {
    const c = await this.client();
    await c.del(this.dns.get(key)!);
    this.dns.delete(key);
  }

  async move(key: string, container: string): Promise<void> {
    const c = await this.client();
    const to = this.dnOf({ key, container });
    await c.modifyDN(this.dns.get(key)!, to);
    this.dns.set(key, to);
  }

  read(o: ConnectorObject): ContractReading {
    const one = (v: unknown) => (Array.isArray(v) ? (v[0] as string) : (v as string | undefined));
    const desc = o.attributes.description;
    const managerDn = o.references?.manager?.[0];
    return {
      key: one(o.attributes.uid)!,
      givenName: one(o.attributes.givenName) ?? null,
      sn: one(o.attributes.sn) ?? null,
      mail: one(o.attributes.mail) ?? null,
      proxyAddresses: desc === undefined || desc === null ? [] : ((Array.isArray(desc) ? desc : [desc]) as string[]),
      manager: managerDn ? rdnValue(managerDn) : undefined,
      container: o.container ? rdnValue(o.container) : undefined,
    };
  }

  exportAdd(p: ContractPerson): ExportChange {
    const attributes: ExportChange['attributes'] = {
      uid: p.key,
      employeeNumber: p.key,
      givenName: p.givenName,
      sn: p.sn,
      cn: `${p.givenName} ${p.sn}`,
      departmentNumber: p.container ?? 'Engineering',
    };
    if (p.mail) attributes.mail = p.mail;
    if (p.proxyAddresses) attributes.description = p.proxyAddresses;
    if (p.manager) attributes.manager = this.dns.get(p.manager)!;
    return { kind: 'add', objectType: 'User', attributes };
  }

  exportUpdate(anchor: string, _key: string, change: { mail?: string | null; addProxy?: string[]; removeProxy?: string[] }): ExportChange {
    const ch: ExportChange = { kind: 'update', anchor, objectType: 'User', attributes: {} };
    if ('mail' in change) ch.attributes.mail = change.mail ?? null;
    if (change.addProxy) ch.multiValueAdds = { description: change.addProxy };
    if (change.removeProxy) ch.multiValueRemoves = { description: change.removeProxy };
    return ch;
  }

  exportDelete(anchor: string): ExportChange {
    return { kind: 'delete', anchor, objectType: 'User', attributes: {} };
  }

  async cleanup(): Promise<void> {
    await this.admin?.unbind().catch(() => undefined);
    this.admin = undefined;
  }
}

export async function closedPort(): Promise<number> {
  return freePort();
}
