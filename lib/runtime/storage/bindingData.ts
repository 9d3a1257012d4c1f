import { randomUUID } from 'node:crypto';
import type { RpcInvocationRequest, RpcTypedData } from '../coreTypes';

function decode(data: RpcTypedData | null | undefined, parseStrings: boolean): unknown {
  if (!data) return undefined;
  if (typeof data.string === 'string') {
    if (!parseStrings) return data.string;
    try {
      return JSON.parse(data.string);
    } catch {
      return data.string;
    }
  }
  if (typeof data.json === 'string') return JSON.parse(data.json);
  if (typeof data.int === 'number') return data.int;
  if (typeof data.double === 'number') return data.double;
  if (data.bytes) {
    try {
      return JSON.parse(Buffer.from(data.bytes).toString('utf8'));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function lookup(obj: unknown, key: string): unknown {
  if (!obj || typeof obj !== 'object') return undefined;
  const rec = obj as Record<string, unknown>;
  if (key in rec) return rec[key];
  const lower = key.toLowerCase();
  const hit = Object.keys(rec).find((k) => k.toLowerCase() === lower);
  return hit === undefined ? undefined : rec[hit];
}

/**
 * The values binding expressions (`{name}`) read, as the host builds them: the trigger metadata (queue
 * `QueueTrigger`, `DequeueCount`, blob path captures, HTTP route parameters, `Query`), then the properties of a
 * JSON trigger payload (a queue message or HTTP body that is a JSON object).
 */
export function bindingData(request: RpcInvocationRequest, triggerName: string): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  const tm = (request.triggerMetadata ?? {}) as Record<string, RpcTypedData>;
  for (const key of Object.keys(tm)) data[key] = decode(tm[key], false);
  if ('Query' in tm) data.Query = decode(tm.Query, false);
  const trigger = request.inputData?.find((i) => i.name === triggerName)?.data;
  const payload = trigger?.http ? decode(trigger.http.body, true) : decode(trigger, true);
  if (payload && typeof payload === 'object' && !Array.isArray(payload)) {
    for (const [k, v] of Object.entries(payload as Record<string, unknown>)) if (lookup(data, k) === undefined) data[k] = v;
  }
  return data;
}

/** Replace `{expression}` in a binding property; a name without a value fails as on the host. */
export function resolveTemplate(template: string, data: Record<string, unknown>): string {
  return template.replace(/\{([^{}]+)\}/g, (_whole, expr: string) => {
    const e = expr.trim();
    const lower = e.toLowerCase();
    if (lower === 'rand-guid' || lower === 'sys.randguid') return randomUUID();
    if (lower === 'datetime' || lower === 'sys.utcnow') return new Date().toISOString();
    let value: unknown = data;
    for (const part of e.split('.')) value = lookup(value, part);
    if (value === undefined || value === null) throw new Error(`No value for named parameter '${e}'.`);
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}
