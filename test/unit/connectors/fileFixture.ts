import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createCustomConnector } from '../../../lib/connectors/registry';
import { valuesOf, type Connector, type ConnectorObject, type ExportChange } from '../../../lib/connectors/sdk';
import type { ContractFixture, ContractPerson, ContractReading } from '../../support/connectorContract';
import { formatCsvRow } from '../../../lib/connectors/file/csv';

/**
 * A folder of HR export files for the connector contract suite: one file, rewritten on every change, with its
 * modification time moved forward each time (so a rewrite within the same millisecond is still seen).
 */
export class FileFixture implements ContractFixture {
  private people = new Map<string, ContractPerson>();
  private extra: string[] = [];
  private tick = Date.now() / 1000 - 3600;

  private constructor(
    readonly root: string,
    readonly format: 'csv' | 'json',
  ) {}

  static async create(format: 'csv' | 'json'): Promise<FileFixture> {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), 'file-connector-'));
    await fs.mkdir(path.join(root, 'data'));
    // The connector works only under its roots (read when a connector is made): the temporary folders are.
    process.env.Connectors__File__Roots = os.tmpdir();
    return new FileFixture(root, format);
  }

  get folder(): string {
    return path.join(this.root, 'data');
  }

  get fileName(): string {
    return this.format === 'csv' ? 'users.csv' : 'users.json';
  }

  settings(): Record<string, unknown> {
    return {
      path: this.folder,
      format: this.format,
      anchorColumn: 'employeeId',
      multiValueColumns: ['proxyAddresses'],
      referenceColumns: { manager: 'User' },
      containerColumn: 'department',
      exportFile: this.fileName,
      stateDirectory: path.join(this.root, 'state'),
    };
  }

  connector(): Connector {
    return createCustomConnector({ implementation: 'file', settings: this.settings() });
  }

  unreachableConnector(): Connector {
    return createCustomConnector({ implementation: 'file', settings: { ...this.settings(), path: path.join(this.root, 'missing') } });
  }

  async seed(people: ContractPerson[]): Promise<void> {
    this.people = new Map(people.map((p) => [p.key, { ...p }]));
    await this.write();
  }

  async update(key: string, changes: Partial<Omit<ContractPerson, 'key'>>): Promise<void> {
    Object.assign(this.people.get(key)!, changes);
    await this.write();
  }

  async remove(key: string): Promise<void> {
    this.people.delete(key);
    await this.write();
  }

  async move(key: string, container: string): Promise<void> {
    await this.update(key, { container });
  }

  async corrupt(): Promise<void> {
    this.extra.push(this.format === 'csv' ? 'E666,"Broken"x,Row,,,,\nE667,too,few\n' : '{"employeeId": "E666", "givenName": }');
    await this.write();
  }

  read(o: ConnectorObject): ContractReading {
    const a = o.attributes;
    const str = (v: unknown) => (v === undefined ? undefined : (v as string | null));
    const r: ContractReading = {
      key: String(a.employeeId),
      givenName: str(a.givenName),
      sn: str(a.sn),
      mail: str(a.mail),
      proxyAddresses: valuesOf(a.proxyAddresses).map(String),
    };
    const manager = o.references?.manager?.[0];
    if (manager !== undefined) r.manager = manager;
    if (o.container !== undefined) r.container = o.container;
    return r;
  }

  exportAdd(p: ContractPerson): ExportChange {
    const attributes: ExportChange['attributes'] = { employeeId: p.key, givenName: p.givenName, sn: p.sn };
    if (p.mail) attributes.mail = p.mail;
    if (p.proxyAddresses) attributes.proxyAddresses = p.proxyAddresses;
    if (p.manager) attributes.manager = p.manager;
    const ch: ExportChange = { kind: 'add', objectType: 'User', anchor: p.key, attributes };
    if (p.container) ch.container = p.container;
    return ch;
  }

  exportUpdate(anchor: string, _key: string, change: { mail?: string | null; addProxy?: string[]; removeProxy?: string[] }): ExportChange {
    const ch: ExportChange = { kind: 'update', objectType: 'User', anchor, attributes: {} };
    if (change.mail !== undefined) ch.attributes.mail = change.mail;
    if (change.addProxy) ch.multiValueAdds = { proxyAddresses: change.addProxy };
    if (change.removeProxy) ch.multiValueRemoves = { proxyAddresses: change.removeProxy };
    return ch;
  }

  exportDelete(anchor: string): ExportChange {
    return { kind: 'delete', objectType: 'User', anchor, attributes: {} };
  }

  async cleanup(): Promise<void> {
    await fs.rm(this.root, { recursive: true, force: true });
  }

  private async write(): Promise<void> {
    const people = [...this.people.values()];
    let text: string;
    if (this.format === 'csv') {
      const header = ['employeeId', 'givenName', 'sn', 'mail', 'proxyAddresses', 'manager', 'department'];
      text =
        '\ufeff' +
        formatCsvRow(header) +
        people
          .map((p) => formatCsvRow([p.key, p.givenName, p.sn, p.mail ?? '', (p.proxyAddresses ?? []).join(';'), p.manager ?? '', p.container ?? '']))
          .join('') +
        this.extra.join('');
    } else {
      const records = people.map((p) =>
        JSON.stringify({
          employeeId: p.key,
          givenName: p.givenName,
          sn: p.sn,
          mail: p.mail ?? null,
          proxyAddresses: p.proxyAddresses ?? [],
          manager: p.manager ?? null,
          department: p.container ?? null,
        }),
      );
      text = '[\n' + [...records, ...this.extra].join(',\n') + '\n]\n';
    }
    const file = path.join(this.folder, this.fileName);
    await fs.writeFile(file, text, 'utf8');
    this.tick += 10;
    await fs.utimes(file, this.tick, this.tick);
  }
}
