/**
 * Roles and what they allow, after farmOS's managed roles (farmos-behaviour.md §6.5): viewers
 * read; workers also create, update and delete records and taxonomy terms (farmOS's
 * ManagedRolePermissionsManager turns a role's "create all", "update all" and "delete all" into
 * `create`, `edit` and `delete terms in <vocabulary>` for every vocabulary, so a farmOS 2.x or 3.x
 * worker adds a crop as a plant type from Field Kit); managers also manage configuration (OAuth
 * clients); account administrators manage users; the administrator may do everything. OAuth
 * scopes are role names, plus `user_access` (all of the user's own roles).
 */
import type { ShapeName } from '../model/descriptor.ts';

export const ROLES = ['farm_viewer', 'farm_worker', 'farm_manager', 'farm_account_admin', 'administrator'] as const;
export type Role = (typeof ROLES)[number];

export const USER_ACCESS_SCOPE = 'user_access';
export const SCOPES = [...ROLES, USER_ACCESS_SCOPE] as const;

export type Permission =
  | 'content:view'
  | 'content:create'
  | 'content:update'
  | 'content:delete'
  /** Delete the records one authored (their `uid`): farmOS 4.0's worker (PR #1033), in the 4.x shape. */
  | 'content:delete_own'
  | 'taxonomy:view'
  | 'taxonomy:create'
  | 'taxonomy:update'
  | 'taxonomy:delete'
  /** Unpublished terms (status false): Drupal's "view unpublished terms" / "administer taxonomy", which no farm role has. */
  | 'taxonomy:view_unpublished'
  | 'user:view'
  | 'user:administer'
  | 'client:administer'
  | 'language:view';

const VIEW: Permission[] = ['content:view', 'taxonomy:view', 'user:view', 'language:view'];
const WRITE: Permission[] = [
  'content:create',
  'content:update',
  'content:delete',
  'taxonomy:create',
  'taxonomy:update',
  'taxonomy:delete',
];
const CONFIGURE: Permission[] = ['client:administer'];

export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  farm_viewer: VIEW,
  farm_worker: [...VIEW, ...WRITE],
  farm_manager: [...VIEW, ...WRITE, ...CONFIGURE],
  // Like every farmOS managed role it has "access content", which is what lets Drupal users see
  // taxonomy terms; it gets no other record rights (farmos-behaviour.md §6.5).
  farm_account_admin: ['taxonomy:view', 'user:view', 'user:administer', 'language:view'],
  administrator: [...VIEW, ...WRITE, ...CONFIGURE, 'user:administer', 'taxonomy:view_unpublished'],
};

export const ROLE_LABELS: Record<Role, string> = {
  farm_viewer: 'Viewer',
  farm_worker: 'Worker',
  farm_manager: 'Manager',
  farm_account_admin: 'Account Admin',
  administrator: 'Administrator',
};

/**
 * farmOS 4.0's managed roles (PR #1033, "Limit permissions of worker role"), which the farmOS 4.x
 * shape applies: a worker deletes only the records they authored, and still creates terms ("via
 * autocomplete textfields") but edits or deletes none. The web pages keep the 2.x rights.
 */
const ROLE_PERMISSIONS_4X: Record<Role, readonly Permission[]> = {
  ...ROLE_PERMISSIONS,
  farm_worker: [...VIEW, 'content:create', 'content:update', 'content:delete_own', 'taxonomy:create'],
};

const PERMISSIONS_BY_SHAPE: Record<ShapeName, Record<Role, readonly Permission[]>> = {
  farmos2: ROLE_PERMISSIONS,
  farmos4: ROLE_PERMISSIONS_4X,
};

/** Whether a set of permissions includes `p`: deleting any record includes deleting one's own. */
export function holds(held: ReadonlySet<Permission>, p: Permission): boolean {
  return held.has(p) || (p === 'content:delete_own' && held.has('content:delete'));
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

export function isScope(value: string): boolean {
  return (SCOPES as readonly string[]).includes(value);
}

export function permissionsOfRoles(roles: Iterable<string>, shape: ShapeName = 'farmos2'): Set<Permission> {
  const table = PERMISSIONS_BY_SHAPE[shape];
  const out = new Set<Permission>();
  for (const role of roles) if (isRole(role)) for (const p of table[role]) out.add(p);
  return out;
}

/**
 * What a token may do: every permission must be granted both by its scopes and by its user's
 * roles (simple_oauth's TokenAuthUser rule). `user_access` grants whatever the user's roles do.
 */
export function effectivePermissions(
  userRoles: readonly string[],
  scopes: readonly string[],
  shape: ShapeName = 'farmos2',
): ReadonlySet<Permission> {
  // Worked out on every request: kept per combination of roles, scopes and shape. Roles are of a
  // fixed set and scopes of the registered ones, so there are few combinations.
  const key = `${userRoles.join(' ')}|${scopes.join(' ')}|${shape}`;
  let known = EFFECTIVE.get(key);
  if (!known) {
    known = computeEffective(userRoles, scopes, shape);
    if (EFFECTIVE.size < 1000) EFFECTIVE.set(key, known);
  }
  return known;
}

const EFFECTIVE = new Map<string, ReadonlySet<Permission>>();

function computeEffective(
  userRoles: readonly string[],
  scopes: readonly string[],
  shape: ShapeName,
): ReadonlySet<Permission> {
  const byRoles = permissionsOfRoles(userRoles, shape);
  const scopeRoles = scopes.includes(USER_ACCESS_SCOPE) ? userRoles : scopes;
  const byScopes = permissionsOfRoles(scopeRoles, shape);
  return new Set([...byRoles].filter((p) => byScopes.has(p)));
}
