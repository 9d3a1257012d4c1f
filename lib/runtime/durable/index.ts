import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RpcBindingInfo, RpcTypedData } from '../coreTypes';
import type { ExtensionContext, RuntimeExtension } from '../extension';
import type { RegisteredFunction } from '../registry';
import type { InvokeResult, OrchestrationTriggerPayload } from './episode';
import { managementPayload, serveApi } from './httpApi';
import { parseOrchestratorFailure, typedDataToJson, typedDataToValue, type OrchestratorState } from './protocol';
import { TaskHubStore } from './store';
import type { ActivityResult } from './workCache';
import { TaskHubWorker } from './worker';

export const WEBHOOK_PREFIX = '/runtime/webhooks/durabletask';

/** Table names are `<hub>Instances`/`<hub>Work`: the hub must be alphanumeric, start with a letter, 3-50 chars. */
export function isValidHubName(name: string): boolean {
  return /^[A-Za-z][A-Za-z0-9]{2,49}$/.test(name);
}

/** The task hub of a runtime process: host.json `extensions.durableTask.hubName`, else derived from its instance id. */
export function hubNameFor(hostJson: Record<string, unknown>, instanceId: string): string {
  const durable = durableSection(hostJson);
  const configured = durable.hubName;
  if (typeof configured === 'string' && configured.trim() !== '') {
    if (!isValidHubName(configured)) {
      throw new Error(`host.json extensions.durableTask.hubName '${configured}' is not valid: use 3-50 letters and digits, starting with a letter.`);
    }
    return configured;
  }
  return 'h' + createHash('sha256').update(instanceId).digest('hex').slice(0, 20);
}

function durableSection(hostJson: Record<string, unknown>): Record<string, unknown> {
  const ext = (hostJson.extensions ?? {}) as Record<string, unknown>;
  return ((ext.durableTask ?? {}) as Record<string, unknown>) ?? {};
}

/**
 * The durable task hub extension: runs `orchestrationTrigger` and `activityTrigger` functions with the
 * durable-functions out-of-process protocol on Azure Storage, provides the `durableClient` input binding
 * and serves the Durable Functions HTTP API under `/runtime/webhooks/durabletask/`.
 *
 * The in-process DurableClient calls the API at `rpcBaseUrl`, which carries a per-process random key in
 * its path (`.../durabletask/rpc-<key>/`) in place of the real host's system key; every other request is an
 * operator's and goes through `ctx.authorizeAdmin` first.
 */
export function createDurableExtension(): RuntimeExtension & { readonly worker?: TaskHubWorker; readonly hubName?: string } {
  let ctx: ExtensionContext | undefined;
  let worker: TaskHubWorker | undefined;
  let store: TaskHubStore | undefined;
  let hubName = '';
  let webhookBase = '';
  const rpcKey = randomBytes(24).toString('hex');

  const fnByType = (name: string, type: string): RegisteredFunction | undefined => {
    const fn = ctx?.registry.get(name);
    return fn && fn.triggerType.toLowerCase() === type ? fn : undefined;
  };

  const invokeOrchestrator = async (name: string, payload: OrchestrationTriggerPayload): Promise<InvokeResult> => {
    const fn = fnByType(name, 'orchestrationtrigger');
    if (!fn || !ctx) return { ok: false, error: `The function '${name}' doesn't exist, is disabled, or is not an orchestrator function.` };
    const outcome = await ctx.invoke(
      fn,
      { invocationId: randomUUID(), inputData: [{ name: fn.triggerName, data: { json: JSON.stringify(payload) } }], triggerMetadata: {} },
      'OrchestratorTriggered',
    );
    if (outcome.response.result?.status === 'success') {
      const state = typedDataToValue(outcome.response.returnValue) as OrchestratorState | undefined;
      if (!state || typeof state !== 'object' || !Array.isArray(state.actions))
        return { ok: false, error: 'The orchestrator function did not return an orchestrator state.' };
      return { ok: true, state };
    }
    const parsed = parseOrchestratorFailure(outcome.response.result?.exception?.message ?? 'The orchestrator function failed.');
    return { ok: false, error: parsed.error, state: parsed.state };
  };

  const invokeActivity = async (name: string, input: string | undefined, instanceId: string): Promise<ActivityResult> => {
    const fn = fnByType(name, 'activitytrigger');
    if (!fn || !ctx) {
      return { ok: false, reason: `The function '${name}' doesn't exist, is disabled, or is not an activity function.`, details: '' };
    }
    const data: RpcTypedData | undefined = input === undefined ? undefined : { json: input };
    const outcome = await ctx.invoke(
      fn,
      { invocationId: randomUUID(), inputData: [{ name: fn.triggerName, data }], triggerMetadata: { instanceId: { string: instanceId } } },
      'ActivityTriggered',
    );
    if (outcome.response.result?.status === 'success') return { ok: true, result: typedDataToJson(outcome.response.returnValue) };
    const ex = outcome.response.result?.exception;
    // Details carry the error's first stack line only (its type and message), never file paths.
    const details = (ex?.stackTrace ?? '').split('\n')[0] ?? '';
    return { ok: false, reason: `Activity function '${name}' failed: ${ex?.message ?? 'unknown error'}`, details };
  };

  const clientData = (): Record<string, unknown> => {
    const q = `taskHub=${encodeURIComponent(hubName)}&connection=Storage`;
    return {
      taskHubName: hubName,
      creationUrls: {
        createNewInstancePostUri: `${webhookBase}/orchestrators/{functionName}[/{instanceId}]?${q}`,
        createAndWaitOnNewInstancePostUri: `${webhookBase}/orchestrators/{functionName}[/{instanceId}]?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}&${q}`,
      },
      managementUrls: managementPayload(webhookBase, hubName, 'INSTANCEID'),
      baseUrl: webhookBase,
      requiredQueryStringParameters: q,
      rpcBaseUrl: `${webhookBase}/rpc-${rpcKey}/`,
      httpBaseUrl: webhookBase,
    };
  };

  const ext = {
    name: 'DurableTask',
    triggerTypes: ['orchestrationtrigger', 'activitytrigger'],
    get worker() {
      return worker;
    },
    get hubName() {
      return hubName;
    },
    inputBindings: {
      durableclient: (_binding: RpcBindingInfo, _fn: RegisteredFunction): RpcTypedData => ({ json: JSON.stringify(clientData()) }),
    },

    async start(context: ExtensionContext): Promise<void> {
      ctx = context;
      hubName = hubNameFor(context.hostJson, context.instanceId);
      const base = new URL(context.baseUrl);
      if (base.hostname === '0.0.0.0' || base.hostname === '[::]') base.hostname = '127.0.0.1';
      webhookBase = `${base.origin}${WEBHOOK_PREFIX}`;
      // durable-functions' getClient rewrites client URLs to localhost:7071 unless WEBSITE_HOSTNAME is set.
      if (!process.env.WEBSITE_HOSTNAME) process.env.WEBSITE_HOSTNAME = base.host;
      const hasDurable = [...context.registry.functions.values()].some((f) =>
        ['orchestrationtrigger', 'activitytrigger'].includes(f.triggerType.toLowerCase()),
      );
      if (!context.storageConnectionString) {
        if (hasDurable) context.logger.log('warning', 'DurableTask', 'AzureWebJobsStorage is not set: orchestrations and activities will not run.');
        return;
      }
      const durable = durableSection(context.hostJson);
      store = new TaskHubStore(context.storageConnectionString, hubName);
      worker = new TaskHubWorker(
        store,
        {
          invokeOrchestrator,
          invokeActivity,
          log: (level, message) => context.logger.log(level, 'DurableTask', message),
        },
        {
          maxConcurrentActivityFunctions: durable.maxConcurrentActivityFunctions as number | undefined,
          maxConcurrentOrchestratorFunctions: durable.maxConcurrentOrchestratorFunctions as number | undefined,
        },
      );
      await worker.start();
      context.logger.log(
        'information',
        'DurableTask',
        `Durable task hub '${hubName}' started (activities <= ${worker.limits.activities}, orchestrations <= ${worker.limits.orchestrations} at a time).`,
        {
          hubName,
        },
      );
    },

    async stop(): Promise<void> {
      await worker?.stop();
    },

    async handleHttp(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
      const path = url.pathname;
      if (path !== WEBHOOK_PREFIX && !path.startsWith(WEBHOOK_PREFIX + '/')) return false;
      let rest = path.slice(WEBHOOK_PREFIX.length + 1).split('/');
      const first = rest[0] ?? '';
      if (first.startsWith('rpc-')) {
        const given = Buffer.from(first.slice(4));
        const want = Buffer.from(rpcKey);
        if (given.length !== want.length || !timingSafeEqual(given, want)) {
          res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ message: 'Not found.' }));
          return true;
        }
        rest = rest.slice(1);
      } else if (ctx) {
        const auth = await ctx.authorizeAdmin(req);
        if (!auth.ok) {
          res.writeHead(auth.status ?? 401, auth.headers ?? {});
          res.end(auth.body ?? '');
          return true;
        }
      }
      if (!worker || !store) {
        res
          .writeHead(503, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ message: 'The durable task hub is not running (AzureWebJobsStorage is not set).' }));
        return true;
      }
      await serveApi(
        {
          worker,
          store,
          hubName,
          webhookBase,
          isOrchestrator: (name) => fnByType(name, 'orchestrationtrigger')?.metadata.name,
        },
        req,
        res,
        url,
        rest,
      );
      return true;
    },
  };
  return ext;
}
