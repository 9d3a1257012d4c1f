import { randomUUID } from 'node:crypto';
import { ScimConnector } from '../../../lib/connectors/scim';
import { ENTERPRISE_USER } from '../../../lib/connectors/scim/attributes';
import type { ConnectorObject, ExportChange } from '../../../lib/connectors/sdk';
import { connectorContract, type ContractFixture, type ContractPerson, type ContractReading } from '../../support/connectorContract';
import { startScimReference, type ReferenceServer } from '../../support/scimReference';

/**
 * The shared connector contract for the SCIM client connector (`scim`), against the reference SCIM server
 * (SCIMMY, test/support/scimReference.ts). People are SCIM users: `key` as userName and externalId, `mail` as the
 * work email, `proxyAddresses` as the other emails, `manager` as the enterprise manager. No delta capability in
 * the contract's sense: a SCIM server lists no deletes, so a delta import reports adds and updates only (deletes
 * are found by the next full import; the delta itself is tested in clientReference.test.ts).
 */
let ref: ReferenceServer;

beforeAll(async () => {
  ref = await startScimReference();
});
afterAll(async () => {
  await ref?.stop();
});

class ScimClientFixture implements ContractFixture {
  private readonly ids = new Map<string, string>();
  readonly secrets = [ref.token];

  connector() {
    return new ScimConnector({
      baseUrl: ref.baseUrl,
      allowHttp: true,
      auth: { type: 'bearer', token: ref.token },
      resourceTypes: ['User'],
      timeoutSeconds: 10,
    });
  }

  unreachableConnector() {
    return new ScimConnector({ baseUrl: 'http://127.0.0.1:1/scim/v2', allowHttp: true, auth: { type: 'bearer', token: ref.token }, timeoutSeconds: 5 });
  }

  private idOf(key: string): string {
    let id = this.ids.get(key) ?? [...ref.users.values()].find((u) => u.userName === key)?.id;
    if (typeof id !== 'string') this.ids.set(key, (id = randomUUID()));
    return id as string;
  }

  private keyOf(id: string): string | undefined {
    return [...this.ids].find(([, v]) => v === id)?.[0] ?? (ref.users.get(id)?.userName as string | undefined);
  }

  private data(p: ContractPerson): Record<string, unknown> {
    const emails = [
      ...(p.mail ? [{ value: p.mail, type: 'work', primary: true }] : []),
      ...(p.proxyAddresses ?? []).map((value) => ({ value, type: 'other' })),
    ];
    return {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE_USER],
      userName: p.key,
      externalId: p.key,
      name: { givenName: p.givenName, familyName: p.sn },
      ...(emails.length ? { emails } : {}),
      [ENTERPRISE_USER]: { ...(p.container ? { department: p.container } : {}), ...(p.manager ? { manager: { value: this.idOf(p.manager) } } : {}) },
    };
  }

  async seed(people: ContractPerson[]): Promise<void> {
    for (const p of people) {
      const id = this.idOf(p.key);
      const current = ref.users.get(id);
      const data = this.data(p);
      if (!current || JSON.stringify({ ...current, id: undefined, meta: undefined }) !== JSON.stringify({ ...data, id: undefined, meta: undefined }))
        ref.put('User', id, data);
    }
  }

  async update(key: string, changes: Partial<Omit<ContractPerson, 'key'>>): Promise<void> {
    const d = structuredClone(ref.users.get(this.idOf(key))!);
    const emails = (d.emails as { value: string; type: string }[] | undefined) ?? [];
    let work = emails.filter((e) => e.type === 'work');
    let other = emails.filter((e) => e.type !== 'work');
    if ('mail' in changes) work = changes.mail ? [{ value: changes.mail, type: 'work' }] : [];
    if (changes.proxyAddresses) other = changes.proxyAddresses.map((value) => ({ value, type: 'other' }));
    d.emails = [...work, ...other];
    if (changes.givenName || changes.sn)
      d.name = { ...(d.name as object), ...(changes.givenName ? { givenName: changes.givenName } : {}), ...(changes.sn ? { familyName: changes.sn } : {}) };
    if (changes.manager) d[ENTERPRISE_USER] = { ...(d[ENTERPRISE_USER] as object), manager: { value: this.idOf(changes.manager) } };
    ref.put('User', this.idOf(key), d);
  }

  async remove(key: string): Promise<void> {
    ref.users.delete(this.idOf(key));
  }

  read(o: ConnectorObject): ContractReading {
    const a = o.attributes;
    const all = (a.emails as string[] | null) ?? [];
    const manager = o.references?.manager?.[0];
    return {
      key: this.keyOf(o.anchor) ?? String(a.userName),
      givenName: a.givenName as string | null,
      sn: a.familyName as string | null,
      mail: (a.email as string | null) ?? null,
      proxyAddresses: all.filter((v) => v !== a.email),
      ...(manager ? { manager: this.keyOf(manager) } : {}),
      ...(a.department ? { container: a.department as string } : {}),
    };
  }

  exportAdd(p: ContractPerson): ExportChange {
    return {
      kind: 'add',
      objectType: 'User',
      attributes: {
        userName: p.key,
        externalId: p.key,
        givenName: p.givenName,
        familyName: p.sn,
        ...(p.mail ? { email: p.mail } : {}),
        ...(p.proxyAddresses ? { emails: p.proxyAddresses } : {}),
        ...(p.manager ? { manager: this.idOf(p.manager) } : {}),
        ...(p.container ? { department: p.container } : {}),
      },
    };
  }

  exportUpdate(anchor: string, _key: string, change: { mail?: string | null; addProxy?: string[]; removeProxy?: string[] }): ExportChange {
    return {
      kind: 'update',
      anchor,
      objectType: 'User',
      attributes: 'mail' in change ? { email: change.mail ?? null } : {},
      ...(change.addProxy ? { multiValueAdds: { emails: change.addProxy } } : {}),
      ...(change.removeProxy ? { multiValueRemoves: { emails: change.removeProxy } } : {}),
    };
  }

  exportDelete(anchor: string): ExportChange {
    return { kind: 'delete', anchor, objectType: 'User', attributes: {} };
  }

  async cleanup(): Promise<void> {
    ref.clear();
  }
}

connectorContract({
  name: 'scim (client, against SCIMMY)',
  capabilities: { delta: false, rename: false, export: true, malformed: false },
  makeFixture: async () => new ScimClientFixture(),
});
