import type { RuntimeExtension } from './extension';
import type { FunctionRegistry } from './registry';
import { getSetting, RuntimeConfigError } from './settings';

/** The app setting that makes the host start without the functions it cannot run (each named in a warning). */
export const SKIP_UNSUPPORTED_SETTING = 'Runtime__SkipUnsupportedFunctions';

export interface UnsupportedBinding {
  functionName: string;
  bindingName: string;
  type: string;
  role: 'trigger' | 'input' | 'output';
}

/**
 * Every binding no part of this runtime runs: a trigger no extension (nor the HTTP host) dispatches, an input
 * no extension provides, an output no extension writes. The HTTP trigger and `http` output are the HTTP host's.
 */
export function unsupportedBindings(registry: FunctionRegistry, extensions: RuntimeExtension[]): UnsupportedBinding[] {
  const out: UnsupportedBinding[] = [];
  for (const fn of registry.functions.values()) {
    for (const [bindingName, binding] of Object.entries(fn.metadata.bindings)) {
      const type = String(binding.type ?? '');
      const t = type.toLowerCase();
      const role = bindingName === fn.triggerName ? 'trigger' : binding.direction === 'out' ? 'output' : 'input';
      let ok: boolean;
      if (role === 'trigger') ok = t === 'httptrigger' || extensions.some((e) => e.triggerTypes.includes(t));
      else if (role === 'output') ok = t === 'http' || extensions.some((e) => e.outputBindings?.[t] !== undefined);
      else ok = extensions.some((e) => e.inputBindings?.[t] !== undefined);
      if (!ok) out.push({ functionName: fn.metadata.name, bindingName, type, role });
    }
  }
  return out;
}

/**
 * Refuse to start when a function declares a binding this runtime does not run (never a silent drop), unless
 * Runtime__SkipUnsupportedFunctions=true: then those functions are removed, and `warn` names each one.
 */
export function enforceSupportedBindings(
  registry: FunctionRegistry,
  extensions: RuntimeExtension[],
  env: NodeJS.ProcessEnv,
  warn: (message: string) => void,
): void {
  const found = unsupportedBindings(registry, extensions);
  if (found.length === 0) return;
  const describe = (u: UnsupportedBinding) =>
    `function '${u.functionName}' uses the ${u.type} ${u.bindingName === '$return' ? 'return' : u.role} binding '${u.bindingName}'`;
  const skip = /^(true|1|yes)$/i.test(getSetting(SKIP_UNSUPPORTED_SETTING, env)?.trim() ?? '');
  if (!skip) {
    const lines = found.map((u) => `  - ${describe(u)}, which this runtime does not support.`);
    throw new RuntimeConfigError(
      SKIP_UNSUPPORTED_SETTING,
      `The app declares bindings this runtime cannot run:\n${lines.join('\n')}\nRun the app on the Functions host, remove those functions, or set ${SKIP_UNSUPPORTED_SETTING}=true to start without them.`,
    );
  }
  for (const name of new Set(found.map((u) => u.functionName))) {
    const reasons = found.filter((u) => u.functionName === name).map((u) => `${u.type} '${u.bindingName}'`);
    registry.functions.delete(name.toLowerCase());
    warn(
      `Skipped function '${name}' (${SKIP_UNSUPPORTED_SETTING}=true): this runtime does not support its binding${reasons.length > 1 ? 's' : ''} ${reasons.join(', ')}. It will not run.`,
    );
  }
}
