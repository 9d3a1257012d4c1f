import { randomBytes, randomUUID } from 'node:crypto';
import { createScimInboundConnector } from '../../../lib/connectors/scimInbound';
import type { ConnectorObject } from '../../../lib/connectors/sdk';
import { createScimResource, deleteScimResource, getScimResource, replaceScimResource, type StoredScimResource } from '../../../lib/storage/scimResources';
import { resetTableClients } from '../../../lib/storage/tables';
import { connectorContract, type ContractFixture, type ContractPerson, type ContractReading } from '../../support/connectorContract';

/**
 * The shared connector contract for `scim_inbound`, on the real store (the `ScimResources` table in the suite's
 * Azurite): people written as SCIM users the way the endpoint writes them (`key` as userName and externalId,
 * `mail` as the primary work email, `proxyAddresses` as further emails, `manager` as the enterprise manager).
 */
const ENT = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

class ScimFixture implements ContractFixture {
  private readonly ids = new Map<string, string>();

  static async create(): Promise<ScimFixture> {
    process.env.AzureWebJobsStorage = process.env.TEST_STORAGE_CONNECTION_STRING;
    process.env.Storage__TablePrefix = 'c' + randomBytes(5).toString('hex');
    resetTableClients();
    return new ScimFixture();
  }

  connector() {
    return createScimInboundConnector();
  }

  unreachableConnector() {
    const refuse = async (): Promise<never> => {
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    };
    return createScimInboundConnector({ list: refuse, changesSince: refuse });
  }

  private data(p: ContractPerson): Record<string, unknown> {
    const emails = [
      ...(p.mail ? [{ value: p.mail, type: 'work', primary: true }] : []),
      ...(p.proxyAddresses ?? []).map((value) => ({ value, type: 'other' })),
    ];
    return {
      userName: p.key,
      externalId: p.key,
      name: { givenName: p.givenName, familyName: p.sn },
      ...(emails.length ? { emails } : {}),
      ...(p.manager ? { [ENT]: { manager: { value: this.idOf(p.manager) } } } : {}),
    };
  }

  private idOf(key: string): string {
    let id = this.ids.get(key);
    if (!id) this.ids.set(key, (id = randomUUID()));
    return id;
  }

  async seed(people: ContractPerson[]): Promise<void> {
    for (const p of people) {
      const id = this.idOf(p.key);
      const current = await getScimResource('User', id);
      const data = this.data(p);
      if (!current) {
        const now = new Date().toISOString();
        await createScimResource({ resourceType: 'User', id, data, version: 1, created: now, lastModified: now, deleted: false });
      } else if (JSON.stringify(current.data) !== JSON.stringify(data)) await this.write(current, data);
    }
  }

  private async write(current: StoredScimResource, data: Record<string, unknown>): Promise<void> {
    await replaceScimResource(current, { ...current, data, version: current.version + 1, lastModified: new Date().toISOString() });
  }

  async update(key: string, changes: Partial<Omit<ContractPerson, 'key'>>): Promise<void> {
    const current = (await getScimResource('User', this.idOf(key)))!;
    const d = structuredClone(current.data);
    const emails = (d.emails as { value: string; type: string; primary?: boolean }[] | undefined) ?? [];
    let work = emails.filter((e) => e.type === 'work');
    let other = emails.filter((e) => e.type !== 'work');
    if ('mail' in changes) work = changes.mail ? [{ value: changes.mail, type: 'work', primary: true }] : [];
    if (changes.proxyAddresses) other = changes.proxyAddresses.map((value) => ({ value, type: 'other' }));
    d.emails = [...work, ...other];
    if (changes.givenName || changes.sn)
      d.name = { ...(d.name as object), ...(changes.givenName ? { givenName: changes.givenName } : {}), ...(changes.sn ? { familyName: changes.sn } : {}) };
    if (changes.manager) d[ENT] = { manager: { value: this.idOf(changes.manager) } };
    await this.write(current, d);
  }

  async remove(key: string): Promise<void> {
    const current = await getScimResource('User', this.idOf(key));
    if (current) await deleteScimResource(current, new Date().toISOString());
  }

  read(o: ConnectorObject): ContractReading {
    const a = o.attributes;
    const key = [...this.ids].find(([, id]) => id === o.anchor)?.[0] ?? String(a.userName);
    const all = (a.emails as string[] | null) ?? [];
    const manager = o.references?.manager?.[0];
    return {
      key,
      givenName: a.givenName as string | null,
      sn: a.familyName as string | null,
      mail: (a.email as string | null) ?? null,
      proxyAddresses: all.filter((v) => v !== a.email),
      ...(manager ? { manager: [...this.ids].find(([, id]) => id === manager)?.[0] } : {}),
    };
  }

  async cleanup(): Promise<void> {}
}

connectorContract({
  name: 'scim_inbound',
  capabilities: { delta: true, rename: false, export: false, malformed: false },
  makeFixture: () => ScimFixture.create(),
});
