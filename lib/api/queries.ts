import { PAGING, type QuerySpec } from '../http/request';
import { RULE_TYPES } from '../storage/rules';
import { CHANGE_OPERATIONS, CHANGE_OUTCOMES } from '../storage/runChanges';
import { RUN_STATUSES } from '../storage/runs';
import { SPACE_LIST_STATES } from '../sync/space/spaceIndex';
import { TARGET_TYPES } from '../config/snapshots';
import { CASE_REASONS, CASE_STATES } from '../schemas/correlation';

/**
 * Query parameters of the list routes: the handlers parse with these and the OpenAPI document describes
 * these, so the two cannot drift.
 */
export const RULES_QUERY = { connectorId: { kind: 'guid' }, ruleType: { kind: 'enum', values: RULE_TYPES }, ...PAGING } as const satisfies QuerySpec;

export const AUDIT_QUERY = {
  targetType: { kind: 'string', maxLength: 64 },
  targetId: { kind: 'string', maxLength: 256 },
  actor: { kind: 'string', maxLength: 256 },
  ...PAGING,
} as const satisfies QuerySpec;

export const RUNS_QUERY = {
  connectorId: { kind: 'guid' },
  instanceId: { kind: 'string', maxLength: 128 },
  status: { kind: 'enum', values: RUN_STATUSES },
  ...PAGING,
} as const satisfies QuerySpec;

export const RUN_CHANGES_QUERY = {
  operation: { kind: 'enum', values: CHANGE_OPERATIONS },
  outcome: { kind: 'enum', values: CHANGE_OUTCOMES },
  ...PAGING,
} as const satisfies QuerySpec;

export const MESH_QUERY = {
  skip: { kind: 'int', min: 0, default: 0 },
  take: { kind: 'int', min: 0, max: 200, default: 50 },
  objectType: { kind: 'string', maxLength: 256 },
  search: { kind: 'string', maxLength: 1024 },
  /** `active` (default): live objects; `deleted`: tombstones, with `deletedOn` and `purgeOn`. */
  state: { kind: 'enum', values: ['active', 'deleted'] },
} as const satisfies QuerySpec;

export const SCHEDULES_QUERY = { ...PAGING } as const satisfies QuerySpec;

export const SCHEDULE_RUNS_QUERY = { ...PAGING } as const satisfies QuerySpec;

export const MESH_HISTORY_QUERY = { ...PAGING } as const satisfies QuerySpec;

export const SPACE_QUERY = {
  state: { kind: 'enum', values: SPACE_LIST_STATES },
  objectType: { kind: 'string', maxLength: 256 },
  search: { kind: 'string', maxLength: 1024 },
  ...PAGING,
} as const satisfies QuerySpec;

export const CONFIG_HISTORY_QUERY = { targetType: { kind: 'enum', values: TARGET_TYPES }, targetId: { kind: 'guid' }, ...PAGING } as const satisfies QuerySpec;

export const CONFIG_IMPORT_QUERY = {
  dryRun: { kind: 'enum', values: ['true', 'false'] },
  prune: { kind: 'enum', values: ['true', 'false'] },
} as const satisfies QuerySpec;

/** `DELETE /connectors/{id}?force=`: true deletes a connector that holds objects or that a schedule runs. */
export const CONNECTOR_DELETE_QUERY = {
  force: { kind: 'enum', values: ['true', 'false'] },
} as const satisfies QuerySpec;

/** `GET /config/changes?status=`. */
export const CONFIG_CHANGES_QUERY = {
  status: { kind: 'enum', values: ['AwaitingApproval', 'Applied', 'Rejected', 'Expired', 'Failed'] },
} as const satisfies QuerySpec;

export const CORRELATION_QUERY = {
  connectorId: { kind: 'guid' },
  state: { kind: 'enum', values: CASE_STATES },
  reason: { kind: 'enum', values: CASE_REASONS },
  minScore: { kind: 'int', min: 0, max: 100000 },
  ...PAGING,
} as const satisfies QuerySpec;
