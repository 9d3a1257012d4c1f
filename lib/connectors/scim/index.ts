import {
  ConnectorError,
  exportChanges,
  type ConnectionTestResult,
  type Connector,
  type ConnectorDefinition,
  type ConnectorSchema,
  type DeltaImportOptions,
  type DeltaPage,
  type Export,
  type ExportChange,
  type ExportOptions,
  type ExportResult,
  type FullImportOptions,
  type ImportPage,
} from '../sdk';
import { SCIM_CONNECTOR_SCHEMA, type ScimResourceType } from './attributes';
import { ScimClient } from './client';
import { exportBulk, exportOne, type WriteSettings } from './export';
import { deltaImport, endpointOf, fullImport, type ReadSettings } from './imports';
import { ScimConfigSchema, type ScimConfig } from './schema';
import { describeFeatures, serverFeatures, UNPUBLISHED, type ServerFeatures } from './serverConfig';

export { ScimConfigSchema, SCIM_EXPRESSIONS, scimChecks, type ScimConfig } from './schema';

export const SCIM_TYPE = 'scim';

/**
 * The SCIM client connector (type `scim`, docs/scim.md "SCIM client connector"): a SCIM 2.0 server read by
 * full and delta import and provisioned by export. A thin façade over its jobs: HTTP, credentials and retries
 * (client.ts), reading (imports.ts), writing (export.ts), the attribute mapping (attributes.ts, shared with
 * `scim_inbound`), the delta watermark (watermark.ts), the server's features (serverConfig.ts).
 *
 * Creating it does no I/O; the server's ServiceProviderConfig is read once, on first need.
 */
export class ScimConnector implements Connector {
  readonly type = SCIM_TYPE;
  readonly client: ScimClient;
  private readonly types: readonly ScimResourceType[];
  private features: Promise<ServerFeatures> | undefined;

  constructor(private readonly config: ScimConfig) {
    this.client = new ScimClient(config);
    this.types = (['User', 'Group'] as const).filter((t) => (config.resourceTypes ?? ['User', 'Group']).includes(t));
  }

  /** GET /ServiceProviderConfig; `strict` (the connection test): its absence is an error, not the RFC's defaults. */
  private async readFeatures(strict: boolean): Promise<ServerFeatures> {
    const res = await this.client.request('GET', '/ServiceProviderConfig');
    if (res.status === 200 && res.body && typeof res.body === 'object') return serverFeatures(res.body);
    if (res.status === 401 || res.status === 403) throw this.client.failure(res, 'Reading /ServiceProviderConfig');
    if (!strict && (res.status === 404 || res.status === 501)) return UNPUBLISHED;
    if (res.status === 404 || res.status === 200)
      throw new ConnectorError(
        'configuration_invalid',
        `${this.client.base}/ServiceProviderConfig answered ${res.status === 404 ? 'HTTP 404' : 'without a JSON body'}: baseUrl does not look like a SCIM 2.0 base URL (it is the URL that /Users and /ServiceProviderConfig are below).`,
        { retriable: false },
      );
    const err = this.client.failure(res, 'Reading /ServiceProviderConfig');
    throw err.code === 'object_error' ? new ConnectorError('connection_failed', err.message, { retriable: false }) : err;
  }

  private serverFeatures(): Promise<ServerFeatures> {
    this.features ??= this.readFeatures(false).catch((err) => {
      this.features = undefined;
      throw err;
    });
    return this.features;
  }

  private get read(): ReadSettings {
    return {
      client: this.client,
      types: this.types,
      pageSize: this.config.pageSize ?? 100,
      overlapSeconds: this.config.deltaOverlapSeconds ?? 60,
      filter: async () => (await this.serverFeatures()).filter,
    };
  }

  private get write(): WriteSettings {
    return {
      client: this.client,
      types: this.types,
      features: () => this.serverFeatures(),
      ...(this.config.useBulk ? { bulkMaxOperations: this.config.bulkMaxOperations ?? 50 } : {}),
    };
  }

  /** The ServiceProviderConfig, then a one-resource list of each resource type: what was reached and what it supports. */
  async testConnection(): Promise<ConnectionTestResult> {
    const f = await this.readFeatures(true);
    this.features = Promise.resolve(f);
    const counts: string[] = [];
    for (const type of this.types) {
      const res = await this.client.request('GET', endpointOf(type), { query: { startIndex: 1, count: 1 } });
      if (res.status !== 200) {
        const err = this.client.failure(res, `Listing ${endpointOf(type)}`);
        throw err.code === 'object_error' || err.code === 'not_found' ? new ConnectorError('configuration_invalid', err.message, { retriable: false }) : err;
      }
      const total = Number((res.body as { totalResults?: unknown } | undefined)?.totalResults);
      counts.push(`${endpointOf(type)}: ${Number.isFinite(total) ? total : 'an unknown number of'} resources`);
    }
    return { message: `SCIM server ${this.client.base} reached: ${counts.join(', ')}; ${describeFeatures(f)}.` };
  }

  async schema(): Promise<ConnectorSchema> {
    return { objectTypes: SCIM_CONNECTOR_SCHEMA.objectTypes.filter((o) => this.types.includes(o.name as ScimResourceType)) };
  }

  async close(): Promise<void> {
    // Each request stands alone (fetch keeps its own connection pool).
  }

  fullImport(options: FullImportOptions): AsyncIterable<ImportPage> {
    return fullImport(this.read, options);
  }

  deltaImport(watermark: string | null, options: DeltaImportOptions): AsyncIterable<DeltaPage> {
    return deltaImport(this.read, watermark, options);
  }

  export(change: ExportChange, options: ExportOptions = {}): Promise<ExportResult> {
    return exportOne(this.write, change, options.signal);
  }

  /** Through Bulk when `useBulk` is set and the server supports it (with PATCH); else one change at a time. */
  async exportBatch(changes: ExportChange[], options: ExportOptions = {}): Promise<ExportResult[]> {
    const bulk = this.config.useBulk ? await exportBulk(this.write, changes, options.signal) : undefined;
    // One change at a time through the SDK's loop (it records what was applied before a run-level failure).
    return bulk ?? exportChanges({ export: (c, o) => this.export(c, o) } as Connector & Export, changes, options);
  }
}

export const scimConnectorDefinition: ConnectorDefinition<ScimConfig> = {
  type: SCIM_TYPE,
  configSchema: ScimConfigSchema,
  create: (config) => new ScimConnector(config),
};
