/**
 * Roles and permissions of the Admin API (the contract's "Roles and permissions" table). Every HTTP route
 * declares its permission where it is registered: `handler: authorize('connectors.write', createConnector)`.
 */
export const ROLES = ['Admin', 'Operator', 'Viewer'] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = {
  'connectors.read': ['Viewer', 'Operator', 'Admin'],
  'rules.read': ['Viewer', 'Operator', 'Admin'],
  'runs.read': ['Viewer', 'Operator', 'Admin'],
  'instances.read': ['Viewer', 'Operator', 'Admin'],
  'mesh.read': ['Viewer', 'Operator', 'Admin'],
  /** The Prometheus metrics (`GET /metrics`); anonymous when `Metrics:AllowAnonymous` is true. */
  'metrics.read': ['Viewer', 'Operator', 'Admin'],
  'schedules.read': ['Viewer', 'Operator', 'Admin'],
  /** The history of connectors, rules and schedules (`GET /config/history`; secrets masked, as every read). */
  'config.read': ['Viewer', 'Operator', 'Admin'],
  'runs.trigger': ['Operator', 'Admin'],
  /** Test a stored connector's connection (it reaches only what an Admin saved, and changes nothing). */
  'connectors.test': ['Operator', 'Admin'],
  'instances.operate': ['Operator', 'Admin'],
  /** Act on one connector-space object (retry a refused export change). */
  'connectorSpace.operate': ['Operator', 'Admin'],
  'connectors.write': ['Admin'],
  /** Restore a deleted mesh object (a tombstone) as a live one. */
  'mesh.restore': ['Admin'],
  'rules.write': ['Admin'],
  'schedules.write': ['Admin'],
  /** Approve or reject a run that waits for approval (it exceeded a threshold). */
  'runs.approve': ['Admin'],
  /** Mark a target's orphan to keep (never swept), or remove the mark (docs/orphans.md). */
  'orphans.keep': ['Admin'],
  'instances.write': ['Admin'],
  /** Export and import of the whole configuration, restore of a version. */
  'config.write': ['Admin'],
  'license.read': ['Admin'],
  'audit.read': ['Admin'],
  /** Operator surfaces of the runtime itself, such as the Durable Functions HTTP API. */
  'runtime.admin': ['Admin'],
} as const satisfies Record<string, readonly Role[]>;

export type Permission = keyof typeof PERMISSIONS;

export function roleHasPermission(role: Role, permission: Permission): boolean {
  return (PERMISSIONS[permission] as readonly Role[]).includes(role);
}

export type AuthScheme = 'Bearer' | 'Negotiate';

export type { Principal } from '../core/principal';
import type { Principal } from '../core/principal';

/** The authenticated caller, as the handlers and the audit log see it. */
export interface Caller {
  scheme: AuthScheme;
  /** The identity name used for rate limiting: `preferred_username` (tokens) or the Kerberos principal. */
  name: string;
  /** Audit identity (spec 5.4): `upn`, else `preferred_username`; for Windows callers the principal name. */
  upn: string | null;
  /** Audit identity (spec 5.4): `oid` for token callers; the SID for Windows callers where known. */
  sid: string | null;
  /** Resolved built-in roles; a caller with no mapped role is a Viewer. */
  roles: Role[];
  /**
   * The raw role evidence the roles were resolved from (token `roles` and `groups` values, or the Windows
   * caller's group names): the SCIM endpoint checks its own role value (`Scim:Role`) against it.
   */
  roleClaims?: readonly string[];
  /**
   * The person (or application) behind the request, with every alias the token or the directory gives
   * (lib/auth/principal.ts): the four-eyes rule and the audit compare and name principals, not schemes.
   */
  principal: Principal;
}
