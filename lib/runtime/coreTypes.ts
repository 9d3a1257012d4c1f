/**
 * The shapes of the `@azure/functions-core` module, the contract between the Functions Node worker and a
 * programming model such as `@azure/functions` v4. Kept here (and not imported from the worker's types
 * package) because the local runtime plays the worker's part. Only the fields the runtime uses are typed
 * strictly; RPC payloads follow the worker's protobuf JSON shapes.
 */

export type RpcLogLevel = 'trace' | 'debug' | 'information' | 'warning' | 'error' | 'critical' | 'none';
export type RpcLogCategory = 'user' | 'system' | 'customMetric';

export interface RpcBindingInfo {
  type?: string | null;
  direction?: 'in' | 'out' | 'inout' | null;
  dataType?: 'undefined' | 'string' | 'binary' | 'stream' | null;
  [key: string]: unknown;
}

export interface FunctionMetadata {
  name: string;
  functionId?: string;
  bindings: Record<string, RpcBindingInfo>;
  retryOptions?: unknown;
}

export interface RpcHttpData {
  method?: string | null;
  url?: string | null;
  headers?: Record<string, string> | null;
  body?: RpcTypedData | null;
  params?: Record<string, string> | null;
  statusCode?: string | null;
  query?: Record<string, string> | null;
  enableContentNegotiation?: boolean | null;
  rawBody?: RpcTypedData | null;
  cookies?: unknown[] | null;
  nullableHeaders?: Record<string, { value?: string | null }> | null;
  nullableParams?: Record<string, { value?: string | null }> | null;
  nullableQuery?: Record<string, { value?: string | null }> | null;
}

export interface RpcTypedData {
  string?: string | null;
  json?: string | null;
  bytes?: Uint8Array | null;
  stream?: Uint8Array | null;
  http?: RpcHttpData | null;
  int?: number | null;
  double?: number | null;
  collectionBytes?: { bytes?: Uint8Array[] | null } | null;
  collectionString?: { string?: string[] | null } | null;
  collectionDouble?: { double?: number[] | null } | null;
  collectionSint64?: { sint64?: number[] | null } | null;
}

export interface RpcParameterBinding {
  name?: string | null;
  data?: RpcTypedData | null;
}

export interface RpcException {
  source?: string | null;
  stackTrace?: string | null;
  message?: string | null;
}

export interface RpcInvocationRequest {
  invocationId?: string | null;
  functionId?: string | null;
  inputData?: RpcParameterBinding[] | null;
  triggerMetadata?: Record<string, RpcTypedData> | null;
  traceContext?: { traceParent?: string | null; traceState?: string | null; attributes?: Record<string, string> | null } | null;
  retryContext?: { retryCount?: number | null; maxRetryCount?: number | null; exception?: RpcException | null } | null;
}

export interface RpcInvocationResponse {
  invocationId?: string | null;
  outputData?: RpcParameterBinding[] | null;
  returnValue?: RpcTypedData | null;
  result?: { status?: 'failure' | 'success' | 'cancelled' | null; exception?: RpcException | null } | null;
}

export type InvocationState = 'preInvocationHooks' | 'postInvocationHooks' | 'invocation';

export interface CoreInvocationContext {
  invocationId: string;
  request: RpcInvocationRequest;
  metadata: FunctionMetadata & { directory?: string; scriptFile?: string };
  state?: InvocationState;
  log(level: RpcLogLevel, category: RpcLogCategory, message: string): void;
}

export type FunctionCallback = (...args: unknown[]) => unknown;

export interface InvocationModel {
  getArguments(): Promise<{ context: unknown; inputs: unknown[] }>;
  invokeFunction(context: unknown, inputs: unknown[], callback: FunctionCallback): Promise<unknown>;
  getResponse(context: unknown, result: unknown): Promise<RpcInvocationResponse>;
}

export interface ProgrammingModel {
  name: string;
  version: string;
  getInvocationModel(coreContext: CoreInvocationContext): InvocationModel;
  getCapabilities?(capabilities: Record<string, string>): Promise<Record<string, string>>;
}

export type HookName = 'preInvocation' | 'postInvocation' | 'appStart' | 'appTerminate';
export type HookCallback = (context: Record<string, unknown>) => void | Promise<void>;
