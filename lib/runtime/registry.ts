import Module from 'node:module';
import type { FunctionCallback, FunctionMetadata, HookCallback, ProgrammingModel, RpcLogCategory, RpcLogLevel } from './coreTypes';

/** The version this runtime reports as the host version (HTTP streaming needs >= 4.28, which we support). */
export const HOST_VERSION = '4.1036.0';
export const WORKER_VERSION = '3.10.1';

export interface RegisteredFunction {
  metadata: FunctionMetadata;
  callback: FunctionCallback;
  /** The binding whose type ends in `Trigger`. */
  triggerName: string;
  triggerType: string;
}

export class Disposable {
  static from(...likes: { dispose: () => unknown }[]): Disposable {
    return new Disposable(() => likes.forEach((l) => l.dispose()));
  }
  #done = false;
  constructor(private readonly callOnDispose: () => unknown) {}
  dispose(): unknown {
    if (this.#done) return undefined;
    this.#done = true;
    return this.callOnDispose();
  }
}

/**
 * What an app registers through `@azure/functions-core`: functions, hooks and its programming model.
 * One registry per hosted app; the core module handed to the app writes into it.
 */
export class FunctionRegistry {
  readonly functions = new Map<string, RegisteredFunction>();
  readonly hooks = new Map<string, HookCallback[]>();
  programmingModel: ProgrammingModel | undefined;
  /** Shared by every hook of the app (`appHookData` in hook contexts). */
  readonly appHookData: Record<string, unknown> = {};
  /** `hookData` of the app-level hooks only (appStart, appTerminate), as the worker's `appLevelOnlyHookData`. */
  readonly appLevelHookData: Record<string, unknown> = {};
  /** Where `coreApi.log` (system logs from the programming model) goes. */
  systemLog: (level: RpcLogLevel, category: RpcLogCategory, message: string) => void = () => undefined;

  registerFunction(metadata: FunctionMetadata, callback: FunctionCallback): Disposable {
    if (this.functions.has(metadata.name.toLowerCase())) {
      throw new Error(`A function with the name "${metadata.name}" has already been registered.`);
    }
    const trigger = Object.entries(metadata.bindings).find(([, b]) => /trigger$/i.test(String(b.type ?? '')));
    if (!trigger) throw new Error(`Function "${metadata.name}" has no trigger binding.`);
    const entry: RegisteredFunction = {
      metadata: { ...metadata, functionId: metadata.functionId ?? metadata.name },
      callback,
      triggerName: trigger[0],
      triggerType: String(trigger[1].type),
    };
    this.functions.set(metadata.name.toLowerCase(), entry);
    return new Disposable(() => this.functions.delete(metadata.name.toLowerCase()));
  }

  registerHook(name: string, callback: HookCallback): Disposable {
    const list = this.hooks.get(name) ?? [];
    list.push(callback);
    this.hooks.set(name, list);
    return new Disposable(() => {
      const i = list.indexOf(callback);
      if (i >= 0) list.splice(i, 1);
    });
  }

  get(name: string): RegisteredFunction | undefined {
    return this.functions.get(name.toLowerCase());
  }

  byTriggerType(type: string): RegisteredFunction[] {
    return [...this.functions.values()].filter((f) => f.triggerType.toLowerCase() === type.toLowerCase());
  }
}

/** The object `require('@azure/functions-core')` returns, bound to one registry. */
export function createCoreApi(registry: FunctionRegistry): Record<string, unknown> {
  return {
    version: WORKER_VERSION,
    get hostVersion() {
      return HOST_VERSION;
    },
    registerFunction: (metadata: FunctionMetadata, callback: FunctionCallback) => registry.registerFunction(metadata, callback),
    registerHook: (name: string, callback: HookCallback) => registry.registerHook(name, callback),
    setProgrammingModel: (model: ProgrammingModel) => {
      registry.programmingModel = model;
    },
    getProgrammingModel: () => registry.programmingModel,
    log: (level: RpcLogLevel, category: RpcLogCategory, message: string) => registry.systemLog(level, category, message),
    Disposable,
  };
}

let installed: Record<string, unknown> | undefined;

/**
 * Provide `@azure/functions-core` to everything loaded after this call, the way the Node worker does:
 * intercept `require` for that one module name. Must run before the app (and `@azure/functions`) loads.
 */
export function installCoreModule(registry: FunctionRegistry): void {
  const api = createCoreApi(registry);
  if (installed) {
    Object.assign(installed, api);
    return;
  }
  installed = api;
  const proto = Module.prototype as unknown as { require: (id: string) => unknown };
  proto.require = new Proxy(proto.require, {
    apply(target, thisArg, args: [string]) {
      if (args[0] === '@azure/functions-core') return installed;
      return Reflect.apply(target, thisArg, args);
    },
  });
}
