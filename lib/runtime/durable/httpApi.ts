import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventType, isTerminal, isValidInstanceId, parseJson, RUNTIME_STATUSES, type HistoryEvent, type RuntimeStatus } from './protocol';
import type { InstanceFilter, InstanceRecord, TaskHubStore } from './store';
import { InstanceConflictError, type TaskHubWorker } from './worker';
import { newExecutionId } from './store';

/**
 * The Durable Functions HTTP API (the extension's HttpApiHandler) under `/runtime/webhooks/durabletask/`:
 * start (`orchestrators/{name}[/{id}]`), status (`instances/{id}`), list and purge-by-filter (`instances/`),
 * raise event, terminate, suspend, resume and purge. Status codes and JSON shapes are those the
 * durable-functions DurableClient expects.
 */
export interface HttpApiDeps {
  worker: TaskHubWorker;
  store: TaskHubStore;
  hubName: string;
  /** `http://host:port/runtime/webhooks/durabletask` (operator routes, used in management URLs). */
  webhookBase: string;
  isOrchestrator(name: string): string | undefined;
}

export const MAX_BODY_BYTES = 4 * 1024 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...(text ? { 'Content-Type': 'application/json; charset=utf-8' } : {}),
    'Content-Length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `The request body exceeds ${MAX_BODY_BYTES} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Request body as JSON text (undefined when empty); 400 when it is not JSON. */
async function jsonBody(req: IncomingMessage): Promise<string | undefined> {
  const text = (await readBody(req)).trim();
  if (!text) return undefined;
  try {
    JSON.parse(text);
  } catch {
    throw new HttpError(400, 'The request body is not valid JSON.');
  }
  return text;
}

function bool(url: URL, name: string, dflt: boolean): boolean {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return dflt;
  if (/^true$/i.test(v)) return true;
  if (/^false$/i.test(v)) return false;
  throw new HttpError(400, `Query parameter '${name}' must be true or false.`);
}

function date(url: URL, name: string): Date | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return undefined;
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw new HttpError(400, `Query parameter '${name}' is not a valid date-time.`);
  return d;
}

function filterFrom(url: URL): InstanceFilter {
  const statuses: RuntimeStatus[] = [];
  for (const raw of url.searchParams.getAll('runtimeStatus').flatMap((v) => v.split(','))) {
    const s = raw.trim();
    if (!s) continue;
    const match = RUNTIME_STATUSES.find((r) => r.toLowerCase() === s.toLowerCase());
    if (!match) throw new HttpError(400, `Query parameter 'runtimeStatus' has an unknown status '${s}' (allowed: ${RUNTIME_STATUSES.join(', ')}).`);
    statuses.push(match);
  }
  return {
    createdTimeFrom: date(url, 'createdTimeFrom'),
    createdTimeTo: date(url, 'createdTimeTo'),
    runtimeStatus: statuses.length ? statuses : undefined,
    instanceIdPrefix: url.searchParams.get('instanceIdPrefix') ?? undefined,
  };
}

function instanceIdOf(raw: string): string {
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, 'The instance id is not valid URL encoding.');
  }
  if (!isValidInstanceId(id)) throw new HttpError(400, "The instance id must be 1-256 characters without '/', '\\', '#', '?' or control characters.");
  return id;
}

export function managementPayload(base: string, hubName: string, instanceId: string): Record<string, string> {
  const q = `taskHub=${encodeURIComponent(hubName)}&connection=Storage`;
  const inst = `${base}/instances/${encodeURIComponent(instanceId)}`;
  return {
    id: instanceId,
    statusQueryGetUri: `${inst}?${q}`,
    sendEventPostUri: `${inst}/raiseEvent/{eventName}?${q}`,
    terminatePostUri: `${inst}/terminate?reason={text}&${q}`,
    rewindPostUri: `${inst}/rewind?reason={text}&${q}`,
    purgeHistoryDeleteUri: `${inst}?${q}`,
    restartPostUri: `${inst}/restart?${q}`,
    suspendPostUri: `${inst}/suspend?reason={text}&${q}`,
    resumePostUri: `${inst}/resume?reason={text}&${q}`,
  };
}

const HIDDEN_EVENTS = new Set([
  EventType.OrchestratorStarted,
  EventType.OrchestratorCompleted,
  EventType.TaskScheduled,
  EventType.SubOrchestrationInstanceCreated,
]);

/** History as the HTTP API shows it (HttpApiHandler: EventType names, FunctionName/ScheduledTime on completions). */
export function presentHistory(events: HistoryEvent[], showOutput: boolean, showInput: boolean): Record<string, unknown>[] {
  const scheduled = new Map<number, HistoryEvent>();
  for (const e of events) if (e.EventType === EventType.TaskScheduled || e.EventType === EventType.SubOrchestrationInstanceCreated) scheduled.set(e.EventId, e);
  const out: Record<string, unknown>[] = [];
  for (const e of events) {
    if (HIDDEN_EVENTS.has(e.EventType)) continue;
    const item: Record<string, unknown> = { EventType: EventType[e.EventType], Timestamp: e.Timestamp };
    const origin = e.TaskScheduledId !== undefined ? scheduled.get(e.TaskScheduledId) : undefined;
    if (origin) {
      item.FunctionName = origin.Name;
      item.ScheduledTime = origin.Timestamp;
      if (origin.InstanceId) item.InstanceId = origin.InstanceId;
    }
    if (e.EventType === EventType.ExecutionStarted) {
      item.FunctionName = e.Name;
      if (showInput) item.Input = parseJson(e.Input) ?? null;
    }
    if (e.EventType === EventType.EventRaised) {
      item.Name = e.Name;
      if (showOutput) item.Input = parseJson(e.Input) ?? null;
    }
    if (e.EventType === EventType.TimerCreated || e.EventType === EventType.TimerFired) item.FireAt = e.FireAt;
    if (e.Reason !== undefined) item.Reason = e.Reason;
    if (e.Details !== undefined && e.Details !== '') item.Details = e.Details;
    if (e.EventType === EventType.ExecutionCompleted)
      item.OrchestrationStatus = ['Running', 'Completed', 'ContinuedAsNew', 'Failed', 'Canceled', 'Terminated'][e.OrchestrationStatus ?? 1];
    if (showOutput && e.Result !== undefined) item.Result = parseJson(e.Result) ?? null;
    out.push(item);
  }
  return out;
}

function statusBody(r: InstanceRecord, showInput: boolean, history?: Record<string, unknown>[]): Record<string, unknown> {
  const body: Record<string, unknown> = {
    name: r.name,
    instanceId: r.instanceId,
    runtimeStatus: r.runtimeStatus,
    input: showInput ? (parseJson(r.input) ?? null) : null,
    customStatus: parseJson(r.customStatus) ?? null,
    output: parseJson(r.output) ?? null,
    createdTime: r.createdTime,
    lastUpdatedTime: r.lastUpdatedTime,
  };
  if (history) {
    body.historyEvents = history;
    // durable-functions' DurableOrchestrationStatus reads `history`.
    body.history = history;
  }
  return body;
}

export async function serveApi(deps: HttpApiDeps, req: IncomingMessage, res: ServerResponse, url: URL, rest: string[]): Promise<void> {
  try {
    await route(deps, req, res, url, rest);
  } catch (err) {
    if (err instanceof HttpError) return send(res, err.status, { message: err.message });
    throw err;
  }
}

async function route(deps: HttpApiDeps, req: IncomingMessage, res: ServerResponse, url: URL, rest: string[]): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  const [head, ...tail] = rest;
  if (head === 'orchestrators' && (tail.length === 1 || tail.length === 2)) {
    if (method !== 'POST') return send(res, 405, { message: 'Use POST to start an orchestration.' }, { Allow: 'POST' });
    let fname: string;
    try {
      fname = decodeURIComponent(tail[0]);
    } catch {
      throw new HttpError(400, 'The function name is not valid URL encoding.');
    }
    const registered = deps.isOrchestrator(fname);
    if (!registered) throw new HttpError(404, `The function '${fname}' doesn't exist, is disabled, or is not an orchestrator function.`);
    const instanceId = tail[1] !== undefined && tail[1] !== '' ? instanceIdOf(tail[1]) : newExecutionId();
    const input = await jsonBody(req);
    try {
      await deps.worker.createInstance(registered, instanceId, input);
    } catch (err) {
      if (err instanceof InstanceConflictError) throw new HttpError(409, err.message);
      throw err;
    }
    const payload = managementPayload(deps.webhookBase, deps.hubName, instanceId);
    return send(res, 202, payload, { Location: payload.statusQueryGetUri, 'Retry-After': '10' });
  }
  if (head === 'entities') return send(res, 501, { message: 'Durable entities are not supported by this local runtime.' });
  if (head !== 'instances') throw new HttpError(404, 'No durable task route matches the request path.');

  if (tail.length === 0 || (tail.length === 1 && tail[0] === '')) {
    const filter = filterFrom(url);
    if (method === 'GET') {
      const showInput = bool(url, 'showInput', true);
      const all = await deps.store.listInstances(filter);
      const topRaw = url.searchParams.get('top');
      const top = topRaw ? Number(topRaw) : undefined;
      if (top !== undefined && (!Number.isInteger(top) || top < 1 || top > 10000))
        throw new HttpError(400, "Query parameter 'top' must be an integer from 1 to 10000.");
      const token = req.headers['x-ms-continuation-token'];
      const offset = typeof token === 'string' && token ? Number(Buffer.from(token, 'base64').toString('utf8')) : 0;
      if (!Number.isInteger(offset) || offset < 0) throw new HttpError(400, 'The x-ms-continuation-token header is not valid.');
      const page = top ? all.slice(offset, offset + top) : all.slice(offset);
      const headers: Record<string, string> = {};
      if (top && offset + top < all.length) headers['x-ms-continuation-token'] = Buffer.from(String(offset + top)).toString('base64');
      return send(
        res,
        200,
        page.map((r) => statusBody(r, showInput)),
        headers,
      );
    }
    if (method === 'DELETE') {
      const candidates = (await deps.store.listInstances(filter)).filter((r) => isTerminal(r.runtimeStatus));
      for (const r of candidates) await deps.worker.purge(r);
      if (!candidates.length) return send(res, 404, { instancesDeleted: 0 });
      return send(res, 200, { instancesDeleted: candidates.length });
    }
    return send(res, 405, { message: 'Use GET to list or DELETE to purge instances.' }, { Allow: 'GET, DELETE' });
  }

  const instanceId = instanceIdOf(tail[0]);
  const op = tail[1];
  const instance = await deps.store.getInstance(instanceId);
  if (op === undefined) {
    if (method === 'GET') {
      if (!instance) return send(res, 404, { message: `No instance with ID '${instanceId}' found.` });
      const showHistory = bool(url, 'showHistory', false);
      const showOutput = bool(url, 'showHistoryOutput', false);
      const showInput = bool(url, 'showInput', true);
      const history = showHistory ? presentHistory(await deps.store.loadHistory(instanceId, instance.executionId), showOutput, showInput) : undefined;
      const active = ['Pending', 'Running', 'ContinuedAsNew', 'Suspended'].includes(instance.runtimeStatus);
      const headers: Record<string, string> = active
        ? { Location: managementPayload(deps.webhookBase, deps.hubName, instanceId).statusQueryGetUri, 'Retry-After': '10' }
        : {};
      return send(res, active ? 202 : 200, statusBody(instance, showInput, history), headers);
    }
    if (method === 'DELETE') {
      if (!instance) return send(res, 404, { message: `No instance with ID '${instanceId}' found.` });
      if (!isTerminal(instance.runtimeStatus)) {
        throw new HttpError(409, `Instance '${instanceId}' is ${instance.runtimeStatus}: only completed, failed or terminated instances can be purged.`);
      }
      await deps.worker.purge(instance);
      return send(res, 200, { instancesDeleted: 1 });
    }
    return send(res, 405, { message: 'Use GET for status or DELETE to purge.' }, { Allow: 'GET, DELETE' });
  }

  if (method !== 'POST') return send(res, 405, { message: `Use POST for '${op}'.` }, { Allow: 'POST' });
  if (op === 'rewind' || op === 'restart') {
    await readBody(req);
    return send(res, 501, { message: `The ${op} operation is not supported by this local runtime.` });
  }
  if (op === 'raiseEvent' && tail.length === 3 && tail[2]) {
    let eventName: string;
    try {
      eventName = decodeURIComponent(tail[2]);
    } catch {
      throw new HttpError(400, 'The event name is not valid URL encoding.');
    }
    const data = await jsonBody(req);
    if (!instance) return send(res, 404, { message: `No instance with ID '${instanceId}' found.` });
    if (isTerminal(instance.runtimeStatus)) return send(res, 410, { message: `Instance '${instanceId}' is ${instance.runtimeStatus}.` });
    await deps.worker.send(instanceId, 'event', { name: eventName, data });
    return send(res, 202, undefined);
  }
  if ((op === 'terminate' || op === 'suspend' || op === 'resume') && tail.length === 2) {
    await readBody(req);
    const reason = url.searchParams.get('reason') ?? '';
    if (reason.length > 4096) throw new HttpError(400, "Query parameter 'reason' is longer than 4096 characters.");
    if (!instance) return send(res, 404, { message: `No instance with ID '${instanceId}' found.` });
    if (isTerminal(instance.runtimeStatus)) return send(res, 410, { message: `Instance '${instanceId}' is ${instance.runtimeStatus}.` });
    await deps.worker.send(instanceId, op, { reason });
    return send(res, 202, undefined);
  }
  throw new HttpError(404, 'No durable task route matches the request path.');
}
