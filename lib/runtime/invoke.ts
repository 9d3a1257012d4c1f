import { randomUUID } from 'node:crypto';
import type { CoreInvocationContext, FunctionCallback, RpcInvocationRequest, RpcInvocationResponse, RpcLogCategory, RpcLogLevel } from './coreTypes';
import type { FunctionRegistry, RegisteredFunction } from './registry';

export interface InvocationLog {
  (level: RpcLogLevel, category: RpcLogCategory, message: string, invocationId: string, functionName: string): void;
}

export interface InvocationOutcome {
  invocationId: string;
  response: RpcInvocationResponse;
  /** Set when the handler (or a hook) threw: the response then carries `result.status = 'failure'`. */
  error?: unknown;
  durationMs: number;
}

export interface InvokeOptions {
  invocationId?: string;
  log: InvocationLog;
}

/**
 * Run one invocation exactly as the Node worker does: the programming model builds the arguments from the
 * RPC request, preInvocation hooks run, the handler runs through the model's `invokeFunction`, postInvocation
 * hooks run, and the model converts the result into an RPC response.
 */
export async function invokeFunction(
  registry: FunctionRegistry,
  fn: RegisteredFunction,
  request: RpcInvocationRequest,
  options: InvokeOptions,
): Promise<InvocationOutcome> {
  const model = registry.programmingModel;
  if (!model) throw new Error('The app did not set a programming model (is @azure/functions v4 loaded?).');
  const invocationId = options.invocationId ?? request.invocationId ?? randomUUID();
  const started = process.hrtime.bigint();
  const coreCtx: CoreInvocationContext = {
    invocationId,
    request: { ...request, invocationId, functionId: fn.metadata.functionId },
    metadata: { ...fn.metadata },
    state: undefined,
    log: (level, category, message) => options.log(level, category, message, invocationId, fn.metadata.name),
  };
  const invocationModel = model.getInvocationModel(coreCtx);
  const hookData: Record<string, unknown> = {};
  const appHookData = registry.appHookData;
  let error: unknown;
  let response: RpcInvocationResponse = { invocationId };
  try {
    const { context, inputs } = await invocationModel.getArguments();
    // One context object for both hook kinds, as the worker does (Object.assign(preContext, { result: null, error: null })):
    // a hook sees `error: null` and `result: null` when there is none, never undefined.
    const hookContext: Record<string, unknown> = { hookData, appHookData, invocationContext: context, inputs, functionCallback: fn.callback };
    coreCtx.state = 'preInvocationHooks';
    for (const hook of registry.hooks.get('preInvocation') ?? []) await hook(hookContext);
    coreCtx.state = 'invocation';
    const post = Object.assign(hookContext, { result: null as unknown, error: null as unknown });
    try {
      post.result = await invocationModel.invokeFunction(context, post.inputs as unknown[], post.functionCallback as FunctionCallback);
    } catch (err) {
      post.error = err;
    }
    coreCtx.state = 'postInvocationHooks';
    try {
      for (const hook of registry.hooks.get('postInvocation') ?? []) await hook(post);
    } catch (err) {
      post.error = err;
    }
    if (post.error !== undefined && post.error !== null) throw post.error;
    response = await invocationModel.getResponse(context, post.result);
    response.result = { status: 'success' };
  } catch (err) {
    error = err;
    const e = err instanceof Error ? err : new Error(String(err));
    response = {
      invocationId,
      result: { status: 'failure', exception: { message: e.message, stackTrace: e.stack ?? null, source: e.name } },
    };
  }
  const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
  return { invocationId, response, error, durationMs };
}
