import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as rules from '../lib/api/rules';
import { authorize } from '../lib/auth/authorize';
import type { Caller } from '../lib/auth/permissions';
import { RULES_QUERY } from '../lib/api/queries';
import { apiPath, created, noContent, ok, parseQuery, readJson, routeId } from '../lib/http';
import { CreateRuleRequest, UpdateRuleRequest } from '../lib/schemas/rules';

async function listRules(request: HttpRequest): Promise<HttpResponseInit> {
  const q = parseQuery(request, RULES_QUERY);
  return ok(await rules.queryRules({ connectorId: q.connectorId, ruleType: q.ruleType, skip: q.skip, take: q.take }));
}

async function getRule(request: HttpRequest): Promise<HttpResponseInit> {
  return ok(rules.ruleView(await rules.getRule(routeId(request, 'id', 'Rule'))));
}

async function createRule(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const rule = await rules.createRule(await readJson(request, CreateRuleRequest, { innerErrors: rules.ruleRequestInnerErrors }), caller);
  return created(apiPath(`rules/${rule.ruleId}`), rule);
}

async function updateRule(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  const id = routeId(request, 'id', 'Rule');
  return ok(await rules.updateRule(id, await readJson(request, UpdateRuleRequest, { innerErrors: rules.ruleRequestInnerErrors }), caller));
}

async function deleteRule(request: HttpRequest, _context: InvocationContext, caller: Caller): Promise<HttpResponseInit> {
  await rules.deleteRule(routeId(request, 'id', 'Rule'), caller);
  return noContent();
}

app.http('listRules', { route: 'rules', methods: ['GET'], handler: authorize('rules.read', listRules) });
app.http('getRule', { route: 'rules/{id}', methods: ['GET'], handler: authorize('rules.read', getRule) });
app.http('createRule', { route: 'rules', methods: ['POST'], handler: authorize('rules.write', createRule) });
app.http('updateRule', { route: 'rules/{id}', methods: ['PUT'], handler: authorize('rules.write', updateRule) });
app.http('deleteRule', { route: 'rules/{id}', methods: ['DELETE'], handler: authorize('rules.write', deleteRule) });
