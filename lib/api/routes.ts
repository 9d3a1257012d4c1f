import type { Permission } from '../auth/permissions';
import type { QuerySpec } from '../http/request';
import {
  AUDIT_QUERY,
  CONFIG_CHANGES_QUERY,
  CONFIG_HISTORY_QUERY,
  CONFIG_IMPORT_QUERY,
  CONNECTOR_DELETE_QUERY,
  MESH_HISTORY_QUERY,
  MESH_QUERY,
  RULES_QUERY,
  RUN_CHANGES_QUERY,
  RUNS_QUERY,
  SCHEDULE_RUNS_QUERY,
  SCHEDULES_QUERY,
  SPACE_QUERY,
} from './queries';
import { LEAVERS_QUERY } from './leavers';
import { CORRELATION_ROUTES } from './correlationRoutes';

/**
 * The route catalog: every Admin API route of the contract, with its permission, rate-limit policy, request
 * and response schemas (by `$id` in the one Ajv instance), success status and error statuses. The OpenAPI
 * document is generated from it, and a test checks that every HTTP registration in functions/ matches it
 * (method, route, permission, rate limit) and that it matches the contract's permission table.
 *
 * Routes are relative to the API base `/api` (host.json `routePrefix`). Error statuses that follow from the
 * route's shape are added by `errorStatuses`: 401/403/429 for authorized routes, 400/413/415 for bodies, 400
 * for query strings, 404 for ids, 500 everywhere.
 */
/** A path parameter: `guid` ids answer 404 when malformed; `instanceId` ids are engine instance ids. */
export interface PathParam {
  name: string;
  kind: 'guid' | 'instanceId' | 'attribute';
  description: string;
}

export interface RouteSpec {
  /** The registration name (`app.http(name, ...)`) and OpenAPI operationId. */
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  route: string;
  permission: Permission | 'anonymous';
  rateLimit?: 'sensitive';
  tag: string;
  summary: string;
  /** `$id` of the body schema; `optional` when the body may be absent. */
  request?: { schema: string; optional?: boolean };
  query?: QuerySpec;
  /** The path parameter's kind: `guid` ids answer 404 when malformed; `name` ids are engine instance ids. */
  pathParam?: PathParam;
  /** Further path parameters after the first (a schedule run under its schedule). */
  morePathParams?: PathParam[];
  /** A second path parameter, a GUID naming a part of the resource (`csObjectId`): a malformed one is a 400. */
  subParam?: { name: string; description: string };
  /** `text`: the media type of a body that is not JSON (the Prometheus exposition). */
  success: { status: 200 | 201 | 202 | 204; schema?: string; location?: boolean; text?: string };
  /** The route may answer 202 with a `ConfigChange`: the change is held for a second Admin (docs/safety.md). */
  held?: true;
  /** Statuses particular to the route (409, 503...), besides those `errorStatuses` derives. */
  errors?: number[];
}

const connectorId = { name: 'id', kind: 'guid', description: 'The connector id.' } as const;
const ruleId = { name: 'id', kind: 'guid', description: 'The rule id.' } as const;
const runId = { name: 'id', kind: 'guid', description: 'The run id.' } as const;
const instanceId = { name: 'id', kind: 'instanceId', description: 'The engine instance id.' } as const;
const meshId = { name: 'id', kind: 'guid', description: 'The mesh object id.' } as const;
const scheduleId = { name: 'id', kind: 'guid', description: 'The schedule id.' } as const;
const scheduleRunId = { name: 'scheduleRunId', kind: 'guid', description: 'The schedule run id.' } as const;
const attributeName = { name: 'name', kind: 'attribute', description: 'The mesh attribute name.' } as const;
const versionId = { name: 'versionId', kind: 'guid', description: 'The configuration version id.' } as const;
const csObjectId = { name: 'csObjectId', description: 'The connector-space object id.' } as const;
const changeId = { name: 'changeId', kind: 'guid', description: 'The configuration change id.' } as const;

export const ROUTES: readonly RouteSpec[] = [
  // Connectors
  {
    name: 'listConnectors',
    method: 'GET',
    route: 'connectors',
    permission: 'connectors.read',
    tag: 'Connectors',
    summary: 'List all configured connectors',
    success: { status: 200, schema: 'ConnectorList' },
  },
  {
    name: 'getConnector',
    method: 'GET',
    route: 'connectors/{id}',
    permission: 'connectors.read',
    tag: 'Connectors',
    summary: 'Get details of a connector (secrets masked)',
    pathParam: connectorId,
    success: { status: 200, schema: 'Connector' },
  },
  {
    name: 'createConnector',
    method: 'POST',
    route: 'connectors',
    permission: 'connectors.write',
    rateLimit: 'sensitive',
    tag: 'Connectors',
    summary: 'Create a connector (202 when it loosens a guard rail: held for a second Admin)',
    request: { schema: 'CreateConnectorRequest' },
    success: { status: 201, schema: 'Connector', location: true },
    held: true,
    errors: [409],
  },
  {
    name: 'updateConnector',
    method: 'PUT',
    route: 'connectors/{id}',
    permission: 'connectors.write',
    rateLimit: 'sensitive',
    tag: 'Connectors',
    summary: 'Update a connector (name and config; the type cannot change); 202 when it loosens a guard rail: held for a second Admin',
    pathParam: connectorId,
    request: { schema: 'UpdateConnectorRequest' },
    success: { status: 200, schema: 'Connector' },
    held: true,
    errors: [409],
  },
  {
    name: 'deleteConnector',
    method: 'DELETE',
    route: 'connectors/{id}',
    permission: 'connectors.write',
    rateLimit: 'sensitive',
    tag: 'Connectors',
    summary:
      'Delete a connector with its rules (409 while a run is Running or Queued; 409 with the counts and schedules while it holds objects or a schedule runs it, unless force=true; forced over its deletes threshold: 202, held for a second Admin)',
    pathParam: connectorId,
    query: CONNECTOR_DELETE_QUERY,
    success: { status: 204 },
    held: true,
    errors: [409],
  },
  {
    name: 'testConnectorConnection',
    method: 'POST',
    route: 'connectors/{id}/test',
    permission: 'connectors.test',
    tag: 'Connectors',
    summary: 'Test the connection of a stored connector (a failed test is 200 with ok: false); not audited: it writes nothing',
    pathParam: connectorId,
    success: { status: 200, schema: 'ConnectionTestResult' },
  },
  // Import and export (sync engine)
  {
    name: 'triggerImport',
    method: 'POST',
    route: 'connectors/{id}/import',
    permission: 'runs.trigger',
    tag: 'Runs',
    summary: 'Trigger a full import, a delta import or a full synchronization (FullSync)',
    pathParam: connectorId,
    request: { schema: 'TriggerImportRequest', optional: true },
    success: { status: 202, schema: 'Run', location: true },
    errors: [409],
  },
  {
    name: 'triggerExport',
    method: 'POST',
    route: 'connectors/{id}/export',
    permission: 'runs.trigger',
    tag: 'Runs',
    summary: 'Trigger an export of the staged changes',
    pathParam: connectorId,
    request: { schema: 'TriggerExportRequest', optional: true },
    success: { status: 202, schema: 'Run', location: true },
    errors: [409],
  },
  // Connector space
  {
    name: 'listConnectorSpace',
    method: 'GET',
    route: 'connectors/{id}/space',
    permission: 'connectors.read',
    tag: 'Connector space',
    summary:
      "List a connector's space, ordered by anchor: state filter (joined, disconnector, pendingExport: every object the next export would change, with adds of mesh objects not in the target yet and changes the target refused; awaitingConfirmation, error; scheduledDeprovision: target objects whose deprovisioning waits for its grace, with dueOn), object type, search (substring of anchor or dn), paging; staged adds with anchor null; partial: true when the next export has more than 20,000 objects to look at",
    pathParam: connectorId,
    query: SPACE_QUERY,
    success: { status: 200, schema: 'ConnectorSpaceList' },
  },
  {
    name: 'getConnectorSpaceObject',
    method: 'GET',
    route: 'connectors/{id}/space/{csObjectId}',
    permission: 'connectors.read',
    tag: 'Connector space',
    summary: 'Get one connector-space object: attributes as last imported, the pending change per attribute (old/new), exported values awaiting confirmation',
    pathParam: connectorId,
    subParam: csObjectId,
    success: { status: 200, schema: 'ConnectorSpaceObjectDetail' },
  },
  {
    name: 'retryConnectorSpaceObject',
    method: 'POST',
    route: 'connectors/{id}/space/{csObjectId}/retry',
    permission: 'connectorSpace.operate',
    tag: 'Connector space',
    summary: "Reset an object's export failure (error and attempts) so that the next export tries its pending change again",
    pathParam: connectorId,
    subParam: csObjectId,
    success: { status: 200, schema: 'ConnectorSpaceObject' },
  },
  {
    name: 'previewConnectorSpaceObject',
    method: 'POST',
    route: 'connectors/{id}/space/{csObjectId}/preview',
    permission: 'connectorSpace.operate',
    tag: 'Connector space',
    summary: 'What a sync of this object would do now, through every rule, to the mesh and to every target; writes nothing (no run, no audit record)',
    pathParam: connectorId,
    subParam: csObjectId,
    success: { status: 200, schema: 'OneObjectSync' },
  },
  {
    name: 'syncConnectorSpaceObject',
    method: 'POST',
    route: 'connectors/{id}/space/{csObjectId}/sync',
    permission: 'connectorSpace.operate',
    tag: 'Connector space',
    summary:
      "Sync this object alone: the mesh and the targets' staging are written (the targets' next exports send it); 409 while a run of the connector is Running or Queued, while the object's change is held by a run awaiting approval or stopped by the gate (the run named), or when it would delete or disable (runs do that)",
    pathParam: connectorId,
    subParam: csObjectId,
    success: { status: 200, schema: 'OneObjectSync' },
    errors: [409],
  },
  // Assignment
  {
    name: 'assignConnectorToInstance',
    method: 'PUT',
    route: 'connectors/{id}/instance',
    permission: 'instances.write',
    tag: 'Instances',
    summary: 'Assign a connector to an engine instance (409 when assigned to another)',
    pathParam: connectorId,
    request: { schema: 'AssignConnectorRequest' },
    success: { status: 200, schema: 'ConnectorAssignment' },
    errors: [409],
  },
  {
    name: 'unassignConnectorFromInstance',
    method: 'DELETE',
    route: 'connectors/{id}/instance',
    permission: 'instances.write',
    tag: 'Instances',
    summary: 'Unassign a connector',
    pathParam: connectorId,
    success: { status: 204 },
  },
  // Rules
  {
    name: 'listRules',
    method: 'GET',
    route: 'rules',
    permission: 'rules.read',
    tag: 'Rules',
    summary: 'List rules, optionally by connector or rule type',
    query: RULES_QUERY,
    success: { status: 200, schema: 'RuleList' },
  },
  {
    name: 'getRule',
    method: 'GET',
    route: 'rules/{id}',
    permission: 'rules.read',
    tag: 'Rules',
    summary: 'Get a rule',
    pathParam: ruleId,
    success: { status: 200, schema: 'Rule' },
  },
  {
    name: 'createRule',
    method: 'POST',
    route: 'rules',
    permission: 'rules.write',
    tag: 'Rules',
    summary: 'Create a rule',
    request: { schema: 'CreateRuleRequest' },
    success: { status: 201, schema: 'Rule', location: true },
  },
  {
    name: 'updateRule',
    method: 'PUT',
    route: 'rules/{id}',
    permission: 'rules.write',
    tag: 'Rules',
    summary: 'Replace a rule (the rule type cannot change)',
    pathParam: ruleId,
    request: { schema: 'UpdateRuleRequest' },
    success: { status: 200, schema: 'Rule' },
    errors: [409],
  },
  {
    name: 'deleteRule',
    method: 'DELETE',
    route: 'rules/{id}',
    permission: 'rules.write',
    tag: 'Rules',
    summary: 'Delete a rule',
    pathParam: ruleId,
    success: { status: 204 },
    errors: [409],
  },
  // Runs
  {
    name: 'getRun',
    method: 'GET',
    route: 'runs/{id}',
    permission: 'runs.read',
    tag: 'Runs',
    summary: 'Get a run',
    pathParam: runId,
    success: { status: 200, schema: 'Run' },
  },
  {
    name: 'cancelRun',
    method: 'POST',
    route: 'runs/{id}/cancel',
    permission: 'runs.trigger',
    tag: 'Runs',
    summary: 'Cancel a Queued or Running run (it ends Cancelled at its next page boundary)',
    pathParam: runId,
    success: { status: 202, schema: 'Run' },
    errors: [409],
  },
  {
    name: 'listRunChanges',
    method: 'GET',
    route: 'runs/{id}/changes',
    permission: 'runs.read',
    tag: 'Runs',
    summary: 'The changes a run made or would make, one item per object, in the order the run made them',
    pathParam: runId,
    query: RUN_CHANGES_QUERY,
    success: { status: 200, schema: 'RunChangeList' },
  },
  {
    name: 'applyPlan',
    method: 'POST',
    route: 'runs/{id}/apply',
    permission: 'runs.trigger',
    tag: 'Runs',
    summary:
      'Apply the plan of a completed dry run: a new run applies exactly its changes (objects changed since: drifted); 409 when expired, already applied, not a dry run, or a rule or connector it was made with changed since (named, with who and when)',
    pathParam: runId,
    success: { status: 202, schema: 'Run', location: true },
    errors: [409],
  },
  {
    name: 'approveRun',
    method: 'POST',
    route: 'runs/{id}/approve',
    permission: 'runs.approve',
    tag: 'Runs',
    summary:
      'Approve a run that waits for approval: it applies its plan (objects changed since: drifted); 403 for the Admin who triggered it (four-eyes rule); 409 when it does not await, or when a rule or connector it was made with changed since (named; the run stays AwaitingApproval)',
    pathParam: runId,
    success: { status: 202, schema: 'Run' },
    errors: [409],
  },
  {
    name: 'rejectRun',
    method: 'POST',
    route: 'runs/{id}/reject',
    permission: 'runs.approve',
    tag: 'Runs',
    summary: 'Reject a run that waits for approval: it ends Rejected, nothing applied; 409 when it does not await',
    pathParam: runId,
    success: { status: 200, schema: 'Run' },
    errors: [409],
  },
  {
    name: 'listRuns',
    method: 'GET',
    route: 'runs',
    permission: 'runs.read',
    tag: 'Runs',
    summary: 'Run history, newest first',
    query: RUNS_QUERY,
    success: { status: 200, schema: 'RunList' },
  },
  // Schedules
  {
    name: 'listSchedules',
    method: 'GET',
    route: 'schedules',
    permission: 'schedules.read',
    tag: 'Schedules',
    summary: 'List schedules, by name',
    query: SCHEDULES_QUERY,
    success: { status: 200, schema: 'ScheduleList' },
  },
  {
    name: 'getSchedule',
    method: 'GET',
    route: 'schedules/{id}',
    permission: 'schedules.read',
    tag: 'Schedules',
    summary: 'Get a schedule with its next tick and newest run',
    pathParam: scheduleId,
    success: { status: 200, schema: 'Schedule' },
  },
  {
    name: 'createSchedule',
    method: 'POST',
    route: 'schedules',
    permission: 'schedules.write',
    tag: 'Schedules',
    summary: 'Create a schedule (NCRONTAB in an IANA time zone, steps run in order)',
    request: { schema: 'CreateScheduleRequest' },
    success: { status: 201, schema: 'Schedule', location: true },
    errors: [409],
  },
  {
    name: 'updateSchedule',
    method: 'PUT',
    route: 'schedules/{id}',
    permission: 'schedules.write',
    tag: 'Schedules',
    summary: 'Replace a schedule',
    pathParam: scheduleId,
    request: { schema: 'UpdateScheduleRequest' },
    success: { status: 200, schema: 'Schedule' },
    errors: [409],
  },
  {
    name: 'deleteSchedule',
    method: 'DELETE',
    route: 'schedules/{id}',
    permission: 'schedules.write',
    tag: 'Schedules',
    summary: 'Delete a schedule and its run history (409 while one of its runs is Running)',
    pathParam: scheduleId,
    success: { status: 204 },
    errors: [409],
  },
  {
    name: 'runScheduleNow',
    method: 'POST',
    route: 'schedules/{id}/run',
    permission: 'runs.trigger',
    tag: 'Schedules',
    summary: 'Start a schedule run now, also of a disabled schedule (409 while one is Running)',
    pathParam: scheduleId,
    success: { status: 202, schema: 'ScheduleRun', location: true },
    errors: [409],
  },
  {
    name: 'listScheduleRuns',
    method: 'GET',
    route: 'schedules/{id}/runs',
    permission: 'schedules.read',
    tag: 'Schedules',
    summary: 'Schedule runs, newest first',
    pathParam: scheduleId,
    query: SCHEDULE_RUNS_QUERY,
    success: { status: 200, schema: 'ScheduleRunList' },
  },
  {
    name: 'getScheduleRun',
    method: 'GET',
    route: 'schedules/{id}/runs/{scheduleRunId}',
    permission: 'schedules.read',
    tag: 'Schedules',
    summary: 'Get a schedule run with its steps and runs',
    pathParam: scheduleId,
    morePathParams: [scheduleRunId],
    success: { status: 200, schema: 'ScheduleRun' },
  },
  {
    name: 'cancelScheduleRun',
    method: 'POST',
    route: 'schedules/{id}/runs/{scheduleRunId}/cancel',
    permission: 'runs.trigger',
    tag: 'Schedules',
    summary: 'Cancel a Running schedule run and its unfinished runs (409 when it is over)',
    pathParam: scheduleId,
    morePathParams: [scheduleRunId],
    success: { status: 202, schema: 'ScheduleRun' },
    errors: [409],
  },
  // Engine instances
  {
    name: 'listInstances',
    method: 'GET',
    route: 'instances',
    permission: 'instances.read',
    tag: 'Instances',
    summary: 'List engine instances with their effective status',
    success: { status: 200, schema: 'EngineInstanceList' },
  },
  {
    name: 'pauseInstance',
    method: 'POST',
    route: 'instances/{id}/pause',
    permission: 'instances.operate',
    tag: 'Instances',
    summary: 'Pause an instance (idempotent)',
    pathParam: instanceId,
    request: { schema: 'InstanceActionRequest', optional: true },
    success: { status: 200, schema: 'EngineInstance' },
  },
  {
    name: 'resumeInstance',
    method: 'POST',
    route: 'instances/{id}/resume',
    permission: 'instances.operate',
    tag: 'Instances',
    summary: 'Resume a paused instance (idempotent)',
    pathParam: instanceId,
    request: { schema: 'InstanceActionRequest', optional: true },
    success: { status: 200, schema: 'EngineInstance' },
  },
  {
    name: 'renameInstance',
    method: 'POST',
    route: 'instances/{id}/rename',
    permission: 'instances.write',
    rateLimit: 'sensitive',
    tag: 'Instances',
    summary: 'Rename an instance (409 when the name is taken)',
    pathParam: instanceId,
    request: { schema: 'RenameInstanceRequest' },
    success: { status: 200, schema: 'EngineInstance' },
    errors: [409],
  },
  {
    name: 'removeInstance',
    method: 'DELETE',
    route: 'instances/{id}',
    permission: 'instances.write',
    rateLimit: 'sensitive',
    tag: 'Instances',
    summary: 'Remove an offline instance and unassign its connectors',
    pathParam: instanceId,
    success: { status: 204 },
    errors: [409],
  },
  // Mesh
  {
    name: 'listMeshObjects',
    method: 'GET',
    route: 'mesh/objects',
    permission: 'mesh.read',
    tag: 'Mesh',
    summary: 'List mesh objects (ordered by anchorValue case-insensitive, then id); state=deleted lists the deleted ones (tombstones) instead',
    query: MESH_QUERY,
    success: { status: 200, schema: 'MeshObjectList' },
    errors: [503],
  },
  {
    name: 'searchMeshObjects',
    method: 'POST',
    route: 'mesh/objects/search',
    permission: 'mesh.read',
    tag: 'Mesh',
    summary: 'Search mesh objects by anchor substring and criteria (AND)',
    request: { schema: 'MeshSearchRequest' },
    success: { status: 200, schema: 'MeshObjectList' },
    errors: [503],
  },
  {
    name: 'getMeshObject',
    method: 'GET',
    route: 'mesh/objects/{id}',
    permission: 'mesh.read',
    tag: 'Mesh',
    summary: 'Mesh object detail with attributes and relationships, display name, connector objects with their states and incoming relationships',
    pathParam: meshId,
    success: { status: 200, schema: 'MeshObject' },
    errors: [503],
  },
  {
    name: 'explainMeshAttribute',
    method: 'GET',
    route: 'mesh/objects/{id}/attributes/{name}/explain',
    permission: 'mesh.read',
    tag: 'Mesh',
    summary:
      "Why a mesh attribute has its value: the winning contribution, every candidate with its outcome, the composer rule and each target's exported value and state; for a relationship, the connector and rule that gave it and each target's value",
    pathParam: meshId,
    morePathParams: [attributeName],
    success: { status: 200, schema: 'AttributeExplanation' },
  },
  {
    name: 'getMeshObjectHistory',
    method: 'GET',
    route: 'mesh/objects/{id}/history',
    permission: 'mesh.read',
    tag: 'Mesh',
    summary: 'History of a mesh object (created, updated, deleted, restored, with attribute-level old and new values), newest first',
    pathParam: meshId,
    query: MESH_HISTORY_QUERY,
    success: { status: 200, schema: 'MeshHistoryPage' },
  },
  {
    name: 'restoreMeshObject',
    method: 'POST',
    route: 'mesh/objects/{id}/restore',
    permission: 'mesh.restore',
    tag: 'Mesh',
    summary:
      'Restore a deleted mesh object (a tombstone) with its attributes as they were; the targets that had it provision it again at their next export (409 when it is not deleted)',
    pathParam: meshId,
    success: { status: 200, schema: 'MeshObject' },
    errors: [409],
  },
  // Configuration history and configuration as code
  {
    name: 'listConfigHistory',
    method: 'GET',
    route: 'config/history',
    permission: 'config.read',
    tag: 'Configuration',
    summary: 'Versions of connectors, rules and schedules (before and after each create, update, delete and restore; secrets as ********), newest first',
    query: CONFIG_HISTORY_QUERY,
    success: { status: 200, schema: 'ConfigHistoryList' },
  },
  {
    name: 'restoreConfigVersion',
    method: 'POST',
    route: 'config/history/{versionId}/restore',
    permission: 'config.write',
    rateLimit: 'sensitive',
    tag: 'Configuration',
    summary:
      "Put the target back as the version left it (a delete's version: as it was before), re-creating a deleted one with its id and its secrets; checked as an update (400/409, nothing changed)",
    pathParam: versionId,
    success: { status: 200, schema: 'ConfigVersion' },
    held: true,
    errors: [409],
  },
  {
    name: 'exportConfig',
    method: 'GET',
    route: 'config/export',
    permission: 'config.write',
    rateLimit: 'sensitive',
    tag: 'Configuration',
    summary: 'The whole configuration as one document (connectors with secrets as ********, rules, schedules)',
    success: { status: 200, schema: 'ConfigDocument' },
  },
  {
    name: 'importConfig',
    method: 'POST',
    route: 'config/import',
    permission: 'config.write',
    rateLimit: 'sensitive',
    tag: 'Configuration',
    summary:
      'Make the document the configuration, all or nothing: matched by id, then name; dryRun lists the changes and writes nothing; prune deletes what the document lacks',
    query: CONFIG_IMPORT_QUERY,
    request: { schema: 'ConfigDocument' },
    success: { status: 200, schema: 'ConfigImportResult' },
    held: true,
    errors: [409],
  },
  {
    name: 'listConfigChanges',
    method: 'GET',
    route: 'config/changes',
    permission: 'config.write',
    tag: 'Configuration',
    summary: 'Configuration changes held for a second Admin (they loosen a guard rail, or are forced deletes over a threshold), newest first',
    query: CONFIG_CHANGES_QUERY,
    success: { status: 200, schema: 'ConfigChangeList' },
  },
  {
    name: 'getConfigChange',
    method: 'GET',
    route: 'config/changes/{changeId}',
    permission: 'config.write',
    tag: 'Configuration',
    summary: 'One held configuration change, with the writes it makes when approved (secrets as ********)',
    pathParam: changeId,
    success: { status: 200, schema: 'ConfigChange' },
  },
  {
    name: 'approveConfigChange',
    method: 'POST',
    route: 'config/changes/{changeId}/approve',
    permission: 'config.write',
    rateLimit: 'sensitive',
    tag: 'Configuration',
    summary:
      'Apply a held change as it was submitted (403 for its requester under the four-eyes rule; 409 when it is not AwaitingApproval or its target changed since)',
    pathParam: changeId,
    success: { status: 200, schema: 'ConfigChange' },
    errors: [409],
  },
  {
    name: 'rejectConfigChange',
    method: 'POST',
    route: 'config/changes/{changeId}/reject',
    permission: 'config.write',
    rateLimit: 'sensitive',
    tag: 'Configuration',
    summary: 'Reject a held change: nothing is applied (409 when it is not AwaitingApproval)',
    pathParam: changeId,
    success: { status: 200, schema: 'ConfigChange' },
    errors: [409],
  },
  {
    name: 'listLeaverClock',
    method: 'GET',
    route: 'leavers',
    permission: 'runs.read',
    tag: 'Runs',
    summary:
      'The leaver clock: each delete or disable of a leaver in a target with when it was seen, sent and confirmed; newest first; state late is computed at the request (docs/leavers.md)',
    query: LEAVERS_QUERY,
    success: { status: 200, schema: 'LeaverList' },
  },
  // Administration
  {
    name: 'getLicense',
    method: 'GET',
    route: 'license',
    permission: 'license.read',
    rateLimit: 'sensitive',
    tag: 'Administration',
    summary: 'The license, from configuration',
    success: { status: 200, schema: 'License' },
  },
  {
    name: 'listAudit',
    method: 'GET',
    route: 'audit',
    permission: 'audit.read',
    rateLimit: 'sensitive',
    tag: 'Administration',
    summary: 'Audit records, newest first',
    query: AUDIT_QUERY,
    success: { status: 200, schema: 'AuditList' },
  },
  {
    name: 'getHealth',
    method: 'GET',
    route: 'health',
    permission: 'anonymous',
    tag: 'Administration',
    summary: 'Service health (anonymous)',
    success: { status: 200, schema: 'Health' },
    errors: [503],
  },
  {
    name: 'getMetrics',
    method: 'GET',
    route: 'metrics',
    permission: 'metrics.read',
    tag: 'Administration',
    summary: 'Prometheus metrics of this engine process (text format); anonymous when Metrics:AllowAnonymous is true',
    success: { status: 200, text: 'text/plain' },
  },
  {
    name: 'getOpenApi',
    method: 'GET',
    route: 'openapi.json',
    permission: 'anonymous',
    tag: 'Administration',
    summary: 'This OpenAPI 3.1 document (anonymous)',
    success: { status: 200 },
  },
  ...CORRELATION_ROUTES,
];

/** Every error status a route can answer with, in ascending order. */
export function errorStatuses(r: RouteSpec): number[] {
  const s = new Set<number>(r.errors ?? []);
  if (r.permission !== 'anonymous') [401, 403, 429].forEach((x) => s.add(x));
  if (r.request) [400, 413, 415].forEach((x) => s.add(x));
  if (r.query) s.add(400);
  if (r.pathParam) s.add(404);
  if (r.subParam) s.add(400);
  if (r.name !== 'getHealth' && r.name !== 'getOpenApi') s.add(500);
  return [...s].sort((a, b) => a - b);
}

/** `METHOD route` (route lower-cased), the key a registration is matched on. */
export const routeKey = (method: string, route: string) => `${method.toUpperCase()} ${route.replace(/^\/+/, '').toLowerCase()}`;
