import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RpcBindingInfo, RpcInvocationRequest, RpcLogLevel, RpcTypedData } from './coreTypes';
import type { InvocationOutcome } from './invoke';
import type { FunctionRegistry, RegisteredFunction } from './registry';

/**
 * The seam between the local host and the trigger/binding extensions it runs (durable task hub, timers),
 * the way the Functions host loads binding extensions. An extension dispatches the trigger types it owns,
 * may provide input bindings (such as `durableClient`), and may serve runtime HTTP routes
 * (such as `/runtime/webhooks/durabletask/...`).
 */
export interface RuntimeLogger {
  log(level: RpcLogLevel, category: string, message: string, fields?: Record<string, unknown>): void;
}

export interface AdminAuthorization {
  ok: boolean;
  /** When not ok: the response to send as is (status, headers, body from the app's authorizer). */
  status?: number;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

export interface ExtensionContext {
  registry: FunctionRegistry;
  /** Run one function invocation through the programming model (hooks, logging, "Executing/Executed" lines). */
  invoke(fn: RegisteredFunction, request: RpcInvocationRequest, reason: string): Promise<InvocationOutcome>;
  logger: RuntimeLogger;
  /** Parsed host.json of the app (with `%Setting%` references resolved). */
  hostJson: Record<string, unknown>;
  /** AzureWebJobsStorage resolved to a real connection string (Azurite's when development storage). */
  storageConnectionString: string;
  /** Stable id of this runtime process (also exported to the app as WEBSITE_INSTANCE_ID). */
  instanceId: string;
  /** `http://host:port` the HTTP host listens on. */
  baseUrl: string;
  appDir: string;
  dataDir: string;
  /**
   * Ask the app whether the caller of a runtime admin route (e.g. the Durable Functions HTTP API) may use it.
   * Backed by the app function named in host.json `localRuntime.adminAuthorizationFunction`; without one,
   * only loopback callers are allowed.
   */
  authorizeAdmin(req: IncomingMessage): Promise<AdminAuthorization>;
}

export type InputBindingProvider = (binding: RpcBindingInfo, fn: RegisteredFunction, request: RpcInvocationRequest) => RpcTypedData | Promise<RpcTypedData>;
export type OutputBindingWriter = (binding: RpcBindingInfo, fn: RegisteredFunction, data: RpcTypedData, request: RpcInvocationRequest) => Promise<void>;

export interface RuntimeExtension {
  readonly name: string;
  /** Trigger binding types (lower case, e.g. `orchestrationtrigger`) this extension dispatches. */
  readonly triggerTypes: string[];
  /**
   * Input binding providers by binding type (lower case, e.g. `durableclient`, `blob`): the value the function
   * receives, read before it runs (the request gives the trigger data binding expressions read).
   */
  readonly inputBindings?: Record<string, InputBindingProvider>;
  /**
   * Output binding writers by binding type (lower case, e.g. `queue`): called after a successful invocation
   * with the value the function set; a throw fails the invocation, as a failed flush does on the host.
   */
  readonly outputBindings?: Record<string, OutputBindingWriter>;
  /**
   * Check the app's configuration for this extension (connections, host.json sections) before anything
   * starts: a throw stops the start with its message.
   */
  validate?(registry: FunctionRegistry, hostJson: Record<string, unknown>): void;
  start(ctx: ExtensionContext): Promise<void>;
  /** Stop taking new work and wait (bounded) for work in flight. */
  stop(): Promise<void>;
  /** Serve a runtime route; return false when the path is not this extension's. */
  handleHttp?(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean>;
}
