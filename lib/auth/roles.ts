import type { Role } from './permissions';

/** What a principal brings to role resolution: `roles` claim values or directory group names, and `groups` GUIDs. */
export interface RoleEvidence {
  /** Token `roles` claim values, or the Windows caller's directory group names and DNs (nesting included; on AD also group SIDs). */
  roleClaims: readonly string[];
  /** Token `groups` claim values (object ids); they match only an identical configured value. */
  groupIds?: readonly string[];
}

/**
 * The single role resolver of spec 5.3: every configured value of every built-in role is compared, by exact
 * (case-sensitive) string equality, with every role claim of the principal. An authenticated principal that
 * matches nothing is a Viewer. The result is ordered Admin, Operator, Viewer.
 */
export function resolveRoles(configured: Record<Role, readonly string[]>, evidence: RoleEvidence): Role[] {
  const have = new Set<string>([...evidence.roleClaims, ...(evidence.groupIds ?? [])]);
  const roles = (['Admin', 'Operator', 'Viewer'] as const).filter((role) => configured[role].some((value) => have.has(value)));
  return roles.length ? roles : ['Viewer'];
}
