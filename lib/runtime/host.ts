import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Azurite, type AzuriteService, connectionStringFor, DEFAULT_ENDPOINTS, isDevelopmentStorage, portAnswers } from './azurite';
import { embeddedAzuriteLimits, STATS_FILE_SETTING, watchTableStats } from './tablePersistence/embedded';
import type { RpcBindingInfo, RpcInvocationRequest, RpcLogCategory, RpcLogLevel } from './coreTypes';
import { lockDataFolder, type DataFolderLock } from './dataLock';
import { createDurableExtension } from './durable';
import type { ExtensionContext, InputBindingProvider, OutputBindingWriter, RuntimeExtension } from './extension';
import { globFiles } from './glob';
import { HttpHost } from './httpHost';
import { invokeFunction, type InvocationOutcome } from './invoke';
import { Logger, type LogFormat } from './logger';
import { ensurePrivateDir } from './privateDir';
import { loopbackUri, withLoopbackServers } from './loopback';
import { FunctionRegistry, installCoreModule, type RegisteredFunction } from './registry';
import { getSetting, loadLocalSettings, readAppMain, readHostJson, RuntimeConfigError } from './settings';
import { createStorageExtension } from './storage';
import { enforceSupportedBindings } from './support';
import { createTimerExtension } from './timers';

/**
 * The local Functions host: loads a Functions app folder (host.json + package.json `main`) the way the
 * Functions host and its Node worker do, runs its hooks, starts the trigger extensions (durable task hub,
 * timers) and serves its HTTP functions. One instance per process: the `@azure/functions-core` module it
 * provides is process-wide, as under the real worker.
 */
export interface HostOptions {
  appDir: string;
  /** Default: PORT, then local.settings.json Host.LocalHttpPort, then 7071. */
  port?: number;
  /** Bind address. Default: HOST, then 127.0.0.1. */
  host?: string;
  /** Default: `<appDir>/.data`. */
  dataDir?: string;
  /** Process environment the app sees (default: process.env; local settings are copied into it). */
  env?: NodeJS.ProcessEnv;
  /** Extensions to host (default: defaultExtensions(): the durable task hub, timers, Azure Storage). */
  extensions?: RuntimeExtension[];
  /** Where log lines go (default: stdout). */
  write?: (line: string) => void;
  /** How long shutdown waits for requests in flight. */
  shutdownGraceMs?: number;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** The extensions `fnhost` hosts: durable task hub, timers, Azure Storage. */
export function defaultExtensions(env: NodeJS.ProcessEnv): RuntimeExtension[] {
  return [createDurableExtension(), createTimerExtension(), createStorageExtension(env)];
}

/** The outcome of an invocation that failed before or after the handler ran (binding errors). */
function failedOutcome(invocationId: string, err: Error, durationMs: number): InvocationOutcome {
  return {
    invocationId,
    error: err,
    durationMs,
    response: { invocationId, result: { status: 'failure', exception: { message: err.message, stackTrace: err.stack ?? null, source: err.name } } },
  };
}

function readOrCreateInstanceId(dataDir: string, env: NodeJS.ProcessEnv): string {
  const fromEnv = env.WEBSITE_INSTANCE_ID?.trim();
  if (fromEnv) return fromEnv;
  const dir = path.join(dataDir, 'runtime');
  const file = path.join(dir, 'instance-id');
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (id) return id;
  } catch {
    // first start: create it below
  }
  ensurePrivateDir(dir);
  const id = randomUUID();
  writeFileSync(file, `${id}\n`);
  return id;
}

export class FunctionsHost {
  readonly registry = new FunctionRegistry();
  readonly appDir: string;
  readonly env: NodeJS.ProcessEnv;
  logger: Logger;
  hostJson: Record<string, unknown> = {};
  dataDir: string;
  instanceId = '';
  storageConnectionString = '';
  baseUrl = '';
  httpUri: string | undefined;
  http: HttpHost | undefined;
  private azurite: Azurite | undefined;
  private stopWatchingStorage: (() => void) | undefined;
  private dataLock: DataFolderLock | undefined;
  private readonly extensions: RuntimeExtension[];
  private startedExtensions: RuntimeExtension[] = [];
  private extensionsStarted = false;
  private stopping: Promise<void> | undefined;
  private appStarted = false;

  constructor(private readonly options: HostOptions) {
    this.appDir = path.resolve(options.appDir);
    this.env = options.env ?? process.env;
    this.dataDir = path.resolve(options.dataDir ?? path.join(this.appDir, '.data'));
    this.extensions = options.extensions ?? defaultExtensions(this.env);
    this.logger = new Logger({ write: options.write, format: this.logFormat() });
  }

  private logFormat(): LogFormat {
    return /^json$/i.test(this.env.LOG_FORMAT ?? '') ? 'json' : 'text';
  }

  /** Load the app, run appStart hooks, start extensions and serve HTTP. Throws on bad configuration. */
  async start(): Promise<void> {
    const t0 = Date.now();
    const settings = loadLocalSettings(this.appDir, this.env);
    this.hostJson = readHostJson(this.appDir, this.env);
    const logging = (this.hostJson.logging ?? {}) as { logLevel?: Record<string, unknown> };
    this.logger = new Logger({ write: this.options.write, format: this.logFormat(), logLevel: logging.logLevel });
    const log = this.logger;
    if (settings.usedSample) log.warn('Host.Startup', `local.settings.json not found in ${this.appDir}: using local.settings.sample.json.`);
    else if (!settings.file) log.info('Host.Startup', 'No local.settings.json: app settings come from the environment only.');
    if (settings.withheld.length)
      log.warn(
        'Host.Startup',
        `Not taken from local.settings.sample.json: ${settings.withheld.join(', ')} (set it in the environment or in local.settings.json; npm start sets AZURE_FUNCTIONS_ENVIRONMENT=Development).`,
      );

    // The data folder holds the lock, the storage emulator's data and the app's secrets: the owner's alone.
    ensurePrivateDir(this.dataDir, (line) => log.warn('Host.Startup', line));
    // Before the instance id: a second process on this folder would take the same id and act as the same instance.
    this.dataLock = lockDataFolder(this.dataDir);
    const stale = this.dataLock.tookOverFrom;
    if (stale)
      log.warn(
        'Host.Startup',
        `Took over the lock of the data folder ${this.dataDir} from pid ${stale.pid} (started ${stale.startedAt}), which no longer runs.`,
      );
    this.instanceId = readOrCreateInstanceId(this.dataDir, this.env);
    this.env.WEBSITE_INSTANCE_ID = this.instanceId;
    await this.resolveStorage();

    installCoreModule(this.registry);
    this.registry.systemLog = (level, category, message) => log.log(level, 'Worker', message, { category });
    await this.loadApp();
    const model = this.registry.programmingModel;
    if (!model) throw new RuntimeConfigError('package.json', 'The app registered no programming model: does it load @azure/functions v4?');
    // The library opens its HTTP streaming proxy here, on every interface unless told otherwise: loopback only.
    const capabilities = (await withLoopbackServers(async () => model.getCapabilities?.({}))) ?? {};
    this.httpUri = loopbackUri(capabilities.HttpUri || undefined);
    // Refused: what no extension of this runtime runs. An embedder that leaves out one of them (a benchmark
    // hosting HTTP only) gets a warning per function it does not run, in the Functions list.
    const known = this.options.extensions ? [...this.extensions, ...defaultExtensions(this.env)] : this.extensions;
    enforceSupportedBindings(this.registry, known, this.env, (message) => log.warn('Host.Startup', message));
    for (const ext of this.extensions) ext.validate?.(this.registry, this.hostJson);
    log.info('Host.Startup', `Worker process started and initialized (${model.name} ${model.version}${this.httpUri ? ', HTTP streaming' : ''}).`);

    for (const hook of this.registry.hooks.get('appStart') ?? []) {
      await hook({ hookData: this.registry.appLevelHookData, appHookData: this.registry.appHookData, functionAppDirectory: this.appDir });
    }
    this.appStarted = true;

    const httpSection = ((this.hostJson.extensions as Record<string, unknown> | undefined)?.http ?? {}) as Record<string, unknown>;
    const routePrefix = typeof httpSection.routePrefix === 'string' ? httpSection.routePrefix : 'api';
    const localRuntime = (this.hostJson.localRuntime ?? {}) as Record<string, unknown>;
    const adminFn = typeof localRuntime.adminAuthorizationFunction === 'string' ? localRuntime.adminAuthorizationFunction : undefined;
    if (adminFn) {
      const fn = this.registry.get(adminFn);
      if (!fn || fn.triggerType.toLowerCase() !== 'httptrigger') {
        throw new RuntimeConfigError(
          'localRuntime.adminAuthorizationFunction',
          `host.json localRuntime.adminAuthorizationFunction names '${adminFn}', which is not an HTTP function of the app.`,
        );
      }
    }
    const limitText = getSetting('FUNCTIONS_REQUEST_BODY_SIZE_LIMIT', this.env);
    const bodyLimit = limitText === undefined || limitText === '' ? DEFAULT_BODY_LIMIT : Number(limitText);
    if (!Number.isInteger(bodyLimit) || bodyLimit <= 0) {
      throw new RuntimeConfigError(
        'FUNCTIONS_REQUEST_BODY_SIZE_LIMIT',
        `FUNCTIONS_REQUEST_BODY_SIZE_LIMIT must be a positive whole number of bytes, not '${limitText}'.`,
      );
    }
    const http = new HttpHost({
      registry: this.registry,
      logger: log,
      routePrefix,
      bodyLimit,
      invoke: (fn, request, reason) => this.invoke(fn, request, reason),
      extensions: this.extensions,
      httpUri: this.httpUri,
      adminAuthorizationFunction: adminFn,
    });
    this.http = http;
    const host = this.options.host ?? this.env.HOST ?? '127.0.0.1';
    const port = this.options.port ?? this.defaultPort(settings.host);
    const address = await http.listen(port, host);
    const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
    this.baseUrl = `http://${shownHost}:${address.port}`;

    const ctx: ExtensionContext = {
      registry: this.registry,
      invoke: (fn, request, reason) => this.invoke(fn, request, reason),
      logger: log,
      hostJson: this.hostJson,
      storageConnectionString: this.storageConnectionString,
      instanceId: this.instanceId,
      baseUrl: this.baseUrl,
      appDir: this.appDir,
      dataDir: this.dataDir,
      authorizeAdmin: (req) => http.authorizeAdmin(req),
    };
    for (const ext of this.extensions) {
      await ext.start(ctx);
      this.startedExtensions.push(ext);
    }
    this.extensionsStarted = true;
    this.printFunctions(http);
    http.open();
    log.info('Host.Startup', `Now listening on: ${this.baseUrl}`, { url: this.baseUrl });
    log.info('Host.Startup', `Host started (${Date.now() - t0}ms)`, { instanceId: this.instanceId });
  }

  private defaultPort(hostSection: Record<string, unknown>): number {
    const fromEnv = this.env.PORT;
    if (fromEnv !== undefined && fromEnv !== '') {
      const n = Number(fromEnv);
      if (!Number.isInteger(n) || n < 0 || n > 65535) throw new RuntimeConfigError('PORT', `PORT must be a port number, not '${fromEnv}'.`);
      return n;
    }
    const local = Number(hostSection.LocalHttpPort);
    return Number.isInteger(local) && local > 0 ? local : 7071;
  }

  /**
   * AzureWebJobsStorage as the host reads it. Development storage means Azurite on its default ports: when
   * nothing answers there, start Azurite with disk persistence under `<dataDir>/azurite`. The app then sees
   * the real connection string in AzureWebJobsStorage.
   */
  private async resolveStorage(): Promise<void> {
    const raw = getSetting('AzureWebJobsStorage', this.env);
    const log = this.logger;
    if (!raw) {
      log.warn('Host.Startup', 'AzureWebJobsStorage is not set: timer schedule status is not kept and durable functions cannot run.');
      return;
    }
    if (!isDevelopmentStorage(raw)) {
      this.storageConnectionString = raw;
      return;
    }
    const { host, tablePort, queuePort, blobPort } = DEFAULT_ENDPOINTS;
    const [tableUp, queueUp, blobUp] = await Promise.all([portAnswers(host, tablePort), portAnswers(host, queuePort), portAnswers(host, blobPort)]);
    const where = `table ${host}:${tablePort}, queue ${host}:${queuePort}, blob ${host}:${blobPort}`;
    const location = path.join(this.dataDir, 'azurite');
    const limits = embeddedAzuriteLimits(this.env);
    const start = async (services: AzuriteService[]) => {
      const onLog = (line: string) => log.log('debug', 'Host.Azurite', line);
      const onTightened = (line: string) => log.warn('Host.Azurite', line);
      const azurite = new Azurite({ location, endpoints: DEFAULT_ENDPOINTS, services, onLog, onTightened, ...limits });
      await azurite.start();
      this.azurite = azurite;
      if (services.includes('table') && azurite.statsFile) {
        // The app's GET /health reads the table process's warnings from here (docs/scaling.md).
        this.env[STATS_FILE_SETTING] = azurite.statsFile;
        this.stopWatchingStorage = watchTableStats(azurite.statsFile, (w) => log.warn('Host.Azurite', w));
      }
      return azurite;
    };
    if (tableUp && queueUp && blobUp) {
      log.info('Host.Startup', `Using the Azurite (development storage) already listening on ${where}.`);
    } else if (tableUp && queueUp) {
      // An Azurite of an earlier runtime version serves table and queue only: add the blob service beside it.
      const azurite = await start(['blob']);
      log.info(
        'Host.Startup',
        `Using the Azurite (development storage) already listening on ${host}:${tablePort} (table) and ${host}:${queuePort} (queue); started its blob service on ${host}:${blobPort} with data in ${location}.`,
        { azuritePids: azurite.pids },
      );
    } else if (tableUp || queueUp || blobUp) {
      const up = [tableUp && `${tablePort} (table)`, queueUp && `${queuePort} (queue)`, blobUp && `${blobPort} (blob)`].filter(Boolean).join(', ');
      throw new RuntimeConfigError(
        'AzureWebJobsStorage',
        `AzureWebJobsStorage is UseDevelopmentStorage=true, but only ${up} answers on ${host}; free the other ports or set a full connection string.`,
      );
    } else {
      const azurite = await start(['table', 'queue', 'blob']);
      log.info('Host.Startup', `Started Azurite (${where}) with data in ${location}; table heap limit ${limits.maxHeapMB} MB.`, {
        azuritePids: azurite.pids,
      });
    }
    this.storageConnectionString = connectionStringFor(DEFAULT_ENDPOINTS);
    for (const key of Object.keys(this.env)) if (key.toLowerCase() === 'azurewebjobsstorage') delete this.env[key];
    this.env.AzureWebJobsStorage = this.storageConnectionString;
  }

  /** Require every file package.json `main` names, as the worker loads entry points. */
  private async loadApp(): Promise<void> {
    const main = readAppMain(this.appDir);
    const files = /[*?{]/.test(main) ? globFiles(this.appDir, main) : [path.resolve(this.appDir, main)];
    if (files.length === 0)
      throw new RuntimeConfigError('package.json', `package.json "main" ('${main}') matches no files in ${this.appDir}. Did you build the app?`);
    for (const file of files) {
      const rel = path.relative(this.appDir, file);
      try {
        if (file.endsWith('.mjs')) await import(pathToFileURL(file).href);
        else {
          try {
            require(file);
          } catch (err) {
            if ((err as { code?: string }).code !== 'ERR_REQUIRE_ESM') throw err;
            await import(pathToFileURL(file).href);
          }
        }
      } catch (err) {
        if ((err as { code?: string }).code === 'MODULE_NOT_FOUND' && String((err as Error).message).includes(file)) {
          throw new RuntimeConfigError('package.json', `package.json "main" names ${rel}, which does not exist. Did you build the app?`);
        }
        if (err instanceof Error) err.message = `Worker was unable to load entry point "${rel}": ${err.message}`;
        throw err;
      }
    }
  }

  /**
   * Run one invocation as the host does: extension input bindings (durableClient...) are added, the
   * `Executing`/`Executed` lines are written around it and handler logs go to the logger.
   */
  async invoke(fn: RegisteredFunction, request: RpcInvocationRequest, reason: string): Promise<InvocationOutcome> {
    const invocationId = request.invocationId ?? randomUUID();
    const name = fn.metadata.name;
    const category = `Function.${name}`;
    const log = this.logger;
    // An HTTP request already gets its one line (Host.Http, naming the function and the invocation id): its
    // `Executing`/`Executed` lines are Debug, so a request is one line, not three. Other triggers keep them at
    // Information, as the Functions host writes them. A failure is an Error line whatever the trigger.
    const level = fn.metadata.bindings && Object.values(fn.metadata.bindings).some((b) => b.type === 'httpTrigger') ? 'debug' : 'information';
    // Lines are formatted only when their level is enabled.
    if (log.enabled(level, category))
      log.log(level, category, `Executing 'Functions.${name}' (Reason='${reason}', Id=${invocationId})`, { invocationId, functionName: name });
    let inputData = request.inputData ?? [];
    const providers = this.inputProviders(fn);
    let outcome: InvocationOutcome | undefined;
    if (providers.length) {
      const t0 = Date.now();
      try {
        inputData = [...inputData];
        for (const [bindingName, binding, provider] of providers) {
          if (inputData.some((i) => i.name === bindingName)) continue;
          const value = provider(binding, fn, request);
          inputData.push({ name: bindingName, data: value instanceof Promise ? await value : value });
        }
      } catch (err) {
        outcome = failedOutcome(
          invocationId,
          new Error(`Exception binding an input of 'Functions.${name}': ${(err as Error)?.message ?? String(err)}`),
          Date.now() - t0,
        );
      }
    }
    outcome ??= await invokeFunction(this.registry, fn, { ...request, invocationId, inputData }, { invocationId, log: this.handlerLog });
    const writers = this.outputWriters(fn);
    if (writers.length && outcome.response.result?.status !== 'failure') {
      const t0 = Date.now();
      try {
        for (const [bindingName, binding, writer] of writers) {
          const data = bindingName === '$return' ? outcome.response.returnValue : outcome.response.outputData?.find((o) => o.name === bindingName)?.data;
          if (data !== undefined && data !== null) await writer(binding, fn, data, request);
        }
      } catch (err) {
        outcome = failedOutcome(
          invocationId,
          new Error(`Error while handling the output binding of 'Functions.${name}': ${(err as Error)?.message ?? String(err)}`),
          outcome.durationMs + Date.now() - t0,
        );
      }
    }
    const duration = Math.round(outcome.durationMs);
    if (outcome.response.result?.status === 'failure') {
      const fields = { invocationId, functionName: name };
      log.error(category, `Executed 'Functions.${name}' (Failed, Id=${invocationId}, Duration=${duration}ms)`, { ...fields, durationMs: duration });
      const err = outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error));
      log.error(category, `Exception while executing function: Functions.${name}. ${err.stack ?? err.message}`, fields);
    } else if (log.enabled(level, category)) {
      log.log(level, category, `Executed 'Functions.${name}' (Succeeded, Id=${invocationId}, Duration=${duration}ms)`, {
        invocationId,
        functionName: name,
        durationMs: duration,
      });
    }
    return outcome;
  }

  private readonly providers = new WeakMap<RegisteredFunction, [string, RpcBindingInfo, InputBindingProvider][]>();
  private readonly writers = new WeakMap<RegisteredFunction, [string, RpcBindingInfo, OutputBindingWriter][]>();

  /** A function's extension input bindings (durableClient, blob, table...), found once per function after extensions started. */
  private inputProviders(fn: RegisteredFunction): [string, RpcBindingInfo, InputBindingProvider][] {
    const hit = this.providers.get(fn);
    if (hit) return hit;
    const out: [string, RpcBindingInfo, InputBindingProvider][] = [];
    for (const [bindingName, binding] of Object.entries(fn.metadata.bindings)) {
      if (binding.direction !== 'in' || bindingName === fn.triggerName) continue;
      const type = String(binding.type ?? '').toLowerCase();
      const provider = this.startedExtensions.map((ext) => ext.inputBindings?.[type]).find((p) => p !== undefined);
      if (provider) out.push([bindingName, binding, provider]);
    }
    // Extensions still starting may add providers: remember only what a fully started host found.
    if (this.extensionsStarted) this.providers.set(fn, out);
    return out;
  }

  /** A function's extension output bindings (queue, blob, table), found once per function after extensions started. */
  private outputWriters(fn: RegisteredFunction): [string, RpcBindingInfo, OutputBindingWriter][] {
    const hit = this.writers.get(fn);
    if (hit) return hit;
    const out: [string, RpcBindingInfo, OutputBindingWriter][] = [];
    for (const [bindingName, binding] of Object.entries(fn.metadata.bindings)) {
      if (binding.direction !== 'out') continue;
      const type = String(binding.type ?? '').toLowerCase();
      const writer = this.startedExtensions.map((ext) => ext.outputBindings?.[type]).find((p) => p !== undefined);
      if (writer) out.push([bindingName, binding, writer]);
    }
    if (this.extensionsStarted) this.writers.set(fn, out);
    return out;
  }

  private readonly handlerLog = (level: RpcLogLevel, category: RpcLogCategory, message: string, invocationId: string, functionName: string): void => {
    const cat = category === 'user' ? `Function.${functionName}.User` : `Function.${functionName}`;
    this.logger.log(level, cat, message, { invocationId, functionName });
  };

  private printFunctions(http: HttpHost): void {
    const lines: string[] = ['', 'Functions:', ''];
    const fns = [...this.registry.functions.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    for (const fn of fns) {
      const trigger = fn.metadata.bindings[fn.triggerName];
      if (fn.triggerType.toLowerCase() === 'httptrigger') {
        const route = typeof trigger.route === 'string' && trigger.route !== '' ? trigger.route : fn.metadata.name;
        const methods =
          Array.isArray(trigger.methods) && trigger.methods.length
            ? (trigger.methods as string[]).map((m) => m.toUpperCase())
            : ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
        lines.push(`        ${fn.metadata.name}: [${methods.join(',')}] ${http.urlFor(route, this.baseUrl)}`, '');
      } else {
        lines.push(`        ${fn.metadata.name}: ${fn.triggerType}`, '');
        const owned = this.extensions.some((e) => e.triggerTypes.includes(fn.triggerType.toLowerCase()));
        if (!owned)
          this.logger.warn(
            'Host.Startup',
            `This host was started without the extension that runs '${fn.triggerType}' triggers: function '${fn.metadata.name}' will not be triggered.`,
          );
      }
    }
    this.logger.plain('Host.Startup', lines.join('\n'), { functions: fns.map((f) => ({ name: f.metadata.name, trigger: f.triggerType })) });
  }

  /**
   * Graceful stop: stop listening, let requests in flight finish (bounded), stop extensions, run appTerminate
   * hooks, stop the Azurite this host started. Safe to call more than once.
   */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    const log = this.logger;
    // A start that failed before anything ran has nothing to stop: say nothing.
    const announce = !!(this.http || this.azurite || this.appStarted);
    if (announce) log.info('Host.Startup', 'Stopping host...');
    try {
      await this.http?.close(this.options.shutdownGraceMs ?? 10_000);
    } catch (err) {
      log.error('Host.Startup', `Error closing the HTTP server: ${(err as Error).message}`);
    }
    for (const ext of [...this.startedExtensions].reverse()) {
      try {
        await ext.stop();
      } catch (err) {
        log.error('Host.Startup', `Error stopping extension ${ext.name}: ${(err as Error).message}`);
      }
    }
    this.startedExtensions = [];
    if (this.appStarted) {
      for (const hook of this.registry.hooks.get('appTerminate') ?? []) {
        try {
          await hook({ hookData: this.registry.appLevelHookData, appHookData: this.registry.appHookData });
        } catch (err) {
          log.error('Host.Startup', `appTerminate hook failed: ${(err as Error).message}`);
        }
      }
    }
    this.stopWatchingStorage?.();
    if (this.azurite) {
      await this.azurite.stop();
      log.info('Host.Startup', 'Stopped Azurite.');
      this.azurite = undefined;
    }
    this.dataLock?.release();
    this.dataLock = undefined;
    if (announce) log.info('Host.Startup', 'Host stopped.');
  }
}
